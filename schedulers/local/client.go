package local

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"go.uber.org/zap"

	"github.com/egret-stream/egret/core/spi"
)

func init() { spi.RegisterScheduler("local", New) }

// Scheduler is the CLI side of the local scheduler: Launch starts the
// service; Kill, Restart and Update call it.
type Scheduler struct {
	workDir string
	egret   string
	log     *zap.Logger
	client  *http.Client
	// startTimeout bounds how long Launch waits for the service.
	startTimeout time.Duration
}

var (
	_ spi.Scheduler = (*Scheduler)(nil)
	_ spi.Launcher  = (*Scheduler)(nil)
)

// Config key naming the egret binary the service and executors run
// (default: the running executable).
const keyEgretBinary = "egret.scheduler.local.egret.binary"

// New builds the local scheduler of one topology from the cluster config
// resolved for that topology.
func New(cfg spi.Config, log *zap.Logger) (spi.Scheduler, error) {
	dir, err := WorkDir(cfg)
	if err != nil {
		return nil, err
	}
	bin := cfg.String(keyEgretBinary, "")
	if bin == "" {
		if bin, err = os.Executable(); err != nil {
			return nil, fmt.Errorf("local scheduler: find the egret binary: %w", err)
		}
	}
	return &Scheduler{workDir: dir, egret: bin, log: log, client: &http.Client{Timeout: 2 * time.Minute}, startTimeout: 30 * time.Second}, nil
}

// Launch writes the job and its config into the working directory and
// starts the scheduler service, detached from the caller.
func (s *Scheduler) Launch(ctx context.Context, job spi.Job) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("local scheduler: launch %s: %w", job.Topology, err)
	}
	dir, err := topologyDir(s.workDir, job.Topology)
	if err != nil {
		return err
	}
	if ep, err := s.endpoint(); err == nil && processAlive(ep.PID) {
		return fmt.Errorf("local scheduler: topology %q already has a scheduler (pid %d) in %s: %w", job.Topology, ep.PID, dir, spi.ErrExists)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("local scheduler: create working directory: %w", err)
	}
	if err := writeJSON(filepath.Join(dir, ConfigFile), job.Config); err != nil {
		return fmt.Errorf("local scheduler: write config: %w", err)
	}
	if err := writeJSON(filepath.Join(dir, jobFile), job); err != nil {
		return fmt.Errorf("local scheduler: write job: %w", err)
	}
	_ = os.Remove(filepath.Join(dir, endpointFile))
	out, err := os.OpenFile(filepath.Join(dir, logFile), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer out.Close()
	cmd := exec.Command(s.egret, "scheduler", "--work-dir", dir, "--config", filepath.Join(dir, ConfigFile))
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("local scheduler: start the service: %w", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	deadline := time.NewTimer(s.startTimeout)
	defer deadline.Stop()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		if _, err := s.status(ctx); err == nil {
			return nil
		}
		select {
		case err := <-exited:
			return fmt.Errorf("local scheduler: the service exited at start (%v); see %s", err, filepath.Join(dir, logFile))
		case <-deadline.C:
			_ = cmd.Process.Kill()
			return fmt.Errorf("local scheduler: the service did not start within %s; see %s", s.startTimeout, filepath.Join(dir, logFile))
		case <-ctx.Done():
			_ = cmd.Process.Kill()
			return ctx.Err()
		case <-tick.C:
		}
	}
}

// Schedule is Launch: the local scheduler always runs as a service.
func (s *Scheduler) Schedule(ctx context.Context, job spi.Job) error { return s.Launch(ctx, job) }

// Kill stops the service and its containers and removes the working
// directory. A topology whose service is gone is only cleaned up.
func (s *Scheduler) Kill(ctx context.Context, topology string) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("local scheduler: kill %s: %w", topology, err)
	}
	dir, err := topologyDir(s.workDir, topology)
	if err != nil {
		return err
	}
	ep, err := s.endpoint()
	if err == nil {
		if _, err := s.post(ctx, ep, "/kill", nil); err != nil && ctx.Err() == nil && processAlive(ep.PID) {
			s.log.Warn("the scheduler service did not answer kill; killing it", zap.Int("pid", ep.PID), zap.Error(err))
			_ = syscall.Kill(ep.PID, syscall.SIGKILL)
		}
		s.waitGone(ctx, ep.PID)
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("local scheduler: kill %s: %w", topology, err)
		}
	}
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("local scheduler: remove %s: %w", dir, err)
	}
	return nil
}

func (s *Scheduler) waitGone(ctx context.Context, pid int) {
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(30 * time.Second)
	for processAlive(pid) {
		select {
		case <-tick.C:
		case <-deadline:
			_ = syscall.Kill(pid, syscall.SIGKILL)
			return
		case <-ctx.Done():
			return
		}
	}
}

// Restart restarts one container, or all with spi.AllContainers.
func (s *Scheduler) Restart(ctx context.Context, topology string, container int) error {
	if _, err := topologyDir(s.workDir, topology); err != nil {
		return err
	}
	ep, err := s.endpoint()
	if err != nil {
		return err
	}
	path := "/restart"
	if container != spi.AllContainers {
		path += "?container=" + strconv.Itoa(container)
	}
	_, err = s.post(ctx, ep, path, nil)
	return err
}

// Update hands the new job (packing plan) to the service.
func (s *Scheduler) Update(ctx context.Context, job spi.Job) error {
	if _, err := topologyDir(s.workDir, job.Topology); err != nil {
		return err
	}
	ep, err := s.endpoint()
	if err != nil {
		return err
	}
	body, err := json.Marshal(job)
	if err != nil {
		return err
	}
	_, err = s.post(ctx, ep, "/update", body)
	return err
}

// JobLinks returns the working directory, where every container's logs are.
func (s *Scheduler) JobLinks(_ context.Context, topology string) ([]string, error) {
	dir, err := topologyDir(s.workDir, topology)
	if err != nil {
		return nil, err
	}
	return []string{"file://" + dir}, nil
}

// Close does nothing.
func (s *Scheduler) Close() error { return nil }

// Containers returns the service's view of the containers.
func (s *Scheduler) Containers(ctx context.Context) ([]Status, error) { return s.status(ctx) }

func (s *Scheduler) endpoint() (endpoint, error) {
	var ep endpoint
	err := readJSON(filepath.Join(s.workDir, endpointFile), &ep)
	if errors.Is(err, os.ErrNotExist) {
		return ep, fmt.Errorf("local scheduler: no scheduler runs in %s: %w", s.workDir, spi.ErrNotFound)
	}
	return ep, err
}

func (s *Scheduler) status(ctx context.Context) ([]Status, error) {
	ep, err := s.endpoint()
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, ep.URL+"/status", nil)
	if err != nil {
		return nil, err
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var out []Status
	return out, json.NewDecoder(resp.Body).Decode(&out)
}

func (s *Scheduler) post(ctx context.Context, ep endpoint, path string, body []byte) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, ep.URL+path, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("local scheduler at %s: %w", ep.URL, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("local scheduler %s: %s: %s", path, resp.Status, bytes.TrimSpace(b))
	}
	return b, nil
}

// processAlive reports whether pid runs. A zombie does not: a service
// orphaned by the CLI that launched it stays one after it exits wherever
// init does not reap (containers without an init process).
func processAlive(pid int) bool {
	if pid <= 0 || syscall.Kill(pid, 0) != nil {
		return false
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true // no procfs: trust kill(pid, 0)
	}
	// "pid (comm) state ...": comm may contain spaces and parentheses.
	i := bytes.LastIndexByte(stat, ')')
	return i < 0 || i+2 >= len(stat) || stat[i+2] != 'Z'
}
