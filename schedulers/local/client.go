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
	"github.com/egret-stream/egret/internal/procinfo"
	"github.com/egret-stream/egret/schedulers/internal/executorcmd"
)

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
	_ spi.Prober    = (*Scheduler)(nil)
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
	if ep, err := s.endpoint(); err == nil && ep.alive() {
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
	return s.startService(ctx, dir)
}

// startService starts the service of the job in the working directory dir
// (checked by topologyDir), detached from the caller, and waits until it
// answers. A new service adopts the executors of a previous one that
// still run.
func (s *Scheduler) startService(ctx context.Context, dir string) error {
	_ = os.Remove(filepath.Join(dir, endpointFile))
	out, err := os.OpenFile(filepath.Join(dir, logFile), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer out.Close()
	cmd := exec.Command(s.egret, Command, "--work-dir", dir, "--config", filepath.Join(dir, ConfigFile))
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
	if err == nil && ep.alive() {
		if _, err := s.post(ctx, ep, "/kill", nil); err != nil && ctx.Err() == nil && ep.alive() {
			s.log.Warn("the scheduler service did not answer kill; killing it", zap.Int("pid", ep.PID), zap.Error(err))
			_ = syscall.Kill(ep.PID, syscall.SIGKILL)
		}
		s.waitGone(ctx, ep.PID, ep.Start)
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("local scheduler: kill %s: %w", topology, err)
		}
	}
	// Executors whose service died (or was killed just now) still run.
	if err := s.killOrphans(ctx, dir); err != nil {
		return fmt.Errorf("local scheduler: kill %s: %w", topology, err)
	}
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("local scheduler: remove %s: %w", dir, err)
	}
	return nil
}

// waitGone waits until the process is gone, killing its process group
// with SIGKILL after 30 seconds.
func (s *Scheduler) waitGone(ctx context.Context, pid int, start string) {
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(30 * time.Second)
	for procinfo.Alive(pid, start) {
		select {
		case <-tick.C:
		case <-deadline:
			_ = syscall.Kill(-pid, syscall.SIGKILL)
			_ = syscall.Kill(pid, syscall.SIGKILL)
			return
		case <-ctx.Done():
			return
		}
	}
}

// killOrphans stops the executors of the container directories that
// still run without a service: SIGTERM, then SIGKILL of the process group
// when they do not stop in time. An executor is found by its record, and
// by its command line (--work-dir) when a service died before recording
// the executor it had just started.
func (s *Scheduler) killOrphans(ctx context.Context, dir string) error {
	dirs, err := filepath.Glob(filepath.Join(dir, "container-*"))
	if err != nil {
		return err
	}
	live := map[int]string{}
	for _, d := range dirs {
		found := procinfo.WithFlag(executorcmd.WorkDirFlag, d)
		var rec executorRecord
		if readJSON(filepath.Join(d, executorFile), &rec) == nil && procinfo.Alive(rec.PID, rec.Start) {
			found[rec.PID] = rec.Start
		}
		for pid, start := range found {
			s.log.Info("stopping an executor without a scheduler service", zap.String("container", filepath.Base(d)), zap.Int("pid", pid))
			live[pid] = start
		}
	}
	for pid := range live {
		_ = syscall.Kill(pid, syscall.SIGTERM)
	}
	for pid, start := range live {
		s.waitGone(ctx, pid, start)
	}
	return ctx.Err()
}

// Probe reports whether the topology's scheduler service runs and
// answers. Without it the containers keep running, but nothing restarts
// one that dies, and update and restart of one container cannot act.
func (s *Scheduler) Probe(ctx context.Context, topology string) error {
	dir, err := topologyDir(s.workDir, topology)
	if err != nil {
		return err
	}
	if _, err := os.Stat(filepath.Join(dir, jobFile)); errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("local scheduler: topology %q has no job in %s: %w", topology, dir, spi.ErrNotFound)
	}
	ep, err := s.endpoint()
	if err == nil && !ep.alive() {
		err = fmt.Errorf("pid %d is gone", ep.PID)
	}
	if err == nil {
		pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		if _, err = s.status(pctx); err != nil {
			err = fmt.Errorf("pid %d does not answer: %w", ep.PID, err)
		}
	}
	if err != nil {
		return fmt.Errorf("the local scheduler service of %q is not running (%v): containers that die are not restarted; egret restart starts it again", topology, err)
	}
	return nil
}

// Restart restarts one container, or all with spi.AllContainers. A
// service that died is started again first; it adopts the executors that
// still run.
func (s *Scheduler) Restart(ctx context.Context, topology string, container int) error {
	dir, err := topologyDir(s.workDir, topology)
	if err != nil {
		return err
	}
	ep, err := s.endpoint()
	if err == nil && !ep.alive() || errors.Is(err, spi.ErrNotFound) {
		if _, serr := os.Stat(filepath.Join(dir, jobFile)); serr != nil {
			return fmt.Errorf("local scheduler: topology %q has no job in %s: %w", topology, dir, spi.ErrNotFound)
		}
		s.log.Info("the scheduler service is not running; starting it again", zap.String("topology", topology))
		if err := s.startService(ctx, dir); err != nil {
			return err
		}
		ep, err = s.endpoint()
	}
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
