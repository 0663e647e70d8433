package local

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"sync"
	"syscall"
	"time"

	"go.uber.org/zap"

	"github.com/egret-stream/egret/core/spi"
	"github.com/egret-stream/egret/internal/httpguard"
	"github.com/egret-stream/egret/internal/procinfo"
	"github.com/egret-stream/egret/schedulers/internal/executorcmd"
)

// ServeConfig configures the scheduler service.
type ServeConfig struct {
	// WorkDir is the topology's working directory holding job.json.
	WorkDir string
	// EgretBinary runs the executors (default: this executable).
	EgretBinary string
	// BackoffInitial and BackoffMax bound the restart delay of a dead
	// executor (defaults 1s and 30s).
	BackoffInitial, BackoffMax time.Duration
	// StopGrace is how long executors get to stop after SIGTERM (10s).
	StopGrace time.Duration
	// Ready, when set, is called with the service's URL once it serves
	// (the egret command publishes it as the topology's scheduler location).
	Ready func(topology, url string)
}

// ConfigFile is the resolved cluster config the service's executors read.
const ConfigFile = "cluster.json"

// service supervises the executors of one topology.
type service struct {
	cfg  ServeConfig
	log  *zap.Logger
	mu   sync.Mutex
	job  spi.Job
	ctrs map[int]*container
	done chan struct{} // closed by /kill
	once sync.Once
}

// container is one supervised executor.
type container struct {
	id       int
	stop     chan struct{} // closed to stop for good
	restart  chan struct{} // a value restarts the executor at once
	exited   chan struct{} // closed when the supervisor returned
	mu       sync.Mutex
	pid      int
	restarts int
}

// Serve runs the scheduler service until ctx ends or /kill is called.
func Serve(ctx context.Context, cfg ServeConfig, log *zap.Logger) error {
	if cfg.EgretBinary == "" {
		exe, err := os.Executable()
		if err != nil {
			return fmt.Errorf("local scheduler: find the egret binary: %w", err)
		}
		cfg.EgretBinary = exe
	}
	if cfg.BackoffInitial <= 0 {
		cfg.BackoffInitial = time.Second
	}
	if cfg.BackoffMax <= 0 {
		cfg.BackoffMax = 30 * time.Second
	}
	if cfg.StopGrace <= 0 {
		cfg.StopGrace = 10 * time.Second
	}
	s := &service{cfg: cfg, log: log, ctrs: map[int]*container{}, done: make(chan struct{})}
	if err := readJSON(filepath.Join(cfg.WorkDir, jobFile), &s.job); err != nil {
		return fmt.Errorf("local scheduler: read the job: %w", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("local scheduler: listen: %w", err)
	}
	srv := &http.Server{Handler: s.routes(), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(httpguard.Listener(ln, log)) }()
	defer func() {
		// Shut down gracefully so that the /kill request gets its answer.
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if srv.Shutdown(sctx) != nil {
			_ = srv.Close()
		}
	}()

	s.mu.Lock()
	for _, id := range containerIDs(s.job) {
		s.startLocked(id)
	}
	s.mu.Unlock()
	ep := endpoint{URL: "http://" + ln.Addr().String(), PID: os.Getpid()}
	ep.Start, _ = procinfo.Start(ep.PID)
	if err := writeJSON(filepath.Join(cfg.WorkDir, endpointFile), ep); err != nil {
		s.stopAll()
		return fmt.Errorf("local scheduler: publish endpoint: %w", err)
	}
	log.Info("local scheduler serving", zap.String("topology", s.job.Topology), zap.String("url", ep.URL), zap.Int("containers", len(s.ctrs)))
	if cfg.Ready != nil {
		cfg.Ready(s.job.Topology, ep.URL)
	}
	select {
	case <-ctx.Done():
	case <-s.done:
	}
	s.stopAll()
	_ = os.Remove(filepath.Join(cfg.WorkDir, endpointFile))
	return nil
}

// containerIDs lists container 0 (the topology manager's) and the plan's.
func containerIDs(job spi.Job) []int {
	ids := []int{0}
	if job.Plan != nil {
		for _, c := range job.Plan.Containers {
			ids = append(ids, c.ID)
		}
	}
	sort.Ints(ids)
	return ids
}

func (s *service) startLocked(id int) {
	c := &container{id: id, stop: make(chan struct{}), restart: make(chan struct{}, 1), exited: make(chan struct{})}
	s.ctrs[id] = c
	go s.supervise(c, s.adopt(id))
}

func (s *service) containerDir(id int) string {
	return filepath.Join(s.cfg.WorkDir, fmt.Sprintf("container-%d", id))
}

// adopt returns the executor a previous service of the topology started
// for container id and that still runs (the service died, its executors
// did not), or nil.
func (s *service) adopt(id int) *proc {
	var rec executorRecord
	if err := readJSON(filepath.Join(s.containerDir(id), executorFile), &rec); err != nil || !procinfo.Alive(rec.PID, rec.Start) {
		return nil
	}
	s.log.Info("adopting the running executor of a previous scheduler service", zap.Int("container", id), zap.Int("pid", rec.PID))
	exited := make(chan error, 1)
	go func() {
		// Not our child: poll until it is gone.
		tick := time.NewTicker(adoptPoll)
		defer tick.Stop()
		for range tick.C {
			if !procinfo.Alive(rec.PID, rec.Start) {
				exited <- fmt.Errorf("adopted executor %d exited", rec.PID)
				return
			}
		}
	}()
	return &proc{pid: rec.PID, exited: exited}
}

// adoptPoll is how often the service checks an adopted executor.
const adoptPoll = 100 * time.Millisecond

// proc is a running executor: started by this service, or adopted.
type proc struct {
	pid    int
	exited <-chan error
}

// supervise runs one container's executor, restarting it when it dies.
// It starts with the adopted executor when there is one.
func (s *service) supervise(c *container, adopted *proc) {
	defer close(c.exited)
	dir := s.containerDir(c.id)
	delay := s.cfg.BackoffInitial
	for {
		s.mu.Lock()
		job := s.job
		s.mu.Unlock()
		started := time.Now()
		err := s.runExecutor(c, job, dir, adopted)
		adopted = nil
		select {
		case <-c.stop:
			return
		default:
		}
		if time.Since(started) > 4*s.cfg.BackoffMax {
			delay = s.cfg.BackoffInitial
		}
		wait := delay
		select {
		case <-c.restart:
			wait = 0
		default:
			delay = min(2*delay, s.cfg.BackoffMax)
		}
		s.log.Warn("executor exited; restarting", zap.Int("container", c.id), zap.Error(err), zap.Duration("after", wait))
		select {
		case <-c.stop:
			return
		case <-c.restart:
		case <-time.After(wait):
		}
		c.mu.Lock()
		c.restarts++
		c.mu.Unlock()
	}
}

// startExecutor starts a container's executor in its own process group.
// It is deliberately not tied to this process's life (no parent-death
// signal): executors outlive a service that crashes, and the next service
// adopts them through the record written here.
func (s *service) startExecutor(c *container, job spi.Job, dir string) (*proc, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	out, err := os.OpenFile(filepath.Join(dir, "executor.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	defer out.Close()
	cmd := exec.Command(s.cfg.EgretBinary, executorcmd.Args(job, c.id, dir, filepath.Join(s.cfg.WorkDir, ConfigFile))...)
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start executor: %w", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	rec := executorRecord{PID: cmd.Process.Pid}
	rec.Start, _ = procinfo.Start(rec.PID)
	if err := writeJSON(filepath.Join(dir, executorFile), rec); err != nil {
		s.log.Warn("could not record the executor; a later service cannot adopt it", zap.Int("container", c.id), zap.Error(err))
	}
	return &proc{pid: cmd.Process.Pid, exited: exited}, nil
}

// runExecutor runs the executor once (or follows the adopted one) and
// returns when it exits, or after stopping it when the container is
// stopped or restarted.
func (s *service) runExecutor(c *container, job spi.Job, dir string, adopted *proc) error {
	p := adopted
	if p == nil {
		var err error
		if p, err = s.startExecutor(c, job, dir); err != nil {
			return err
		}
	}
	c.mu.Lock()
	c.pid = p.pid
	c.mu.Unlock()
	select {
	case err := <-p.exited:
		return err
	case <-c.stop:
	case <-c.restart:
		// Tell supervise to skip the backoff (unless a concurrent restart
		// request already did).
		select {
		case c.restart <- struct{}{}:
		default:
		}
	}
	_ = syscall.Kill(p.pid, syscall.SIGTERM)
	select {
	case err := <-p.exited:
		return err
	case <-time.After(s.cfg.StopGrace):
		_ = syscall.Kill(-p.pid, syscall.SIGKILL) // its process group
		return <-p.exited
	}
}

func (s *service) stopContainer(c *container) {
	select {
	case <-c.stop:
	default:
		close(c.stop)
	}
	<-c.exited
}

func (s *service) stopAll() {
	s.mu.Lock()
	ctrs := make([]*container, 0, len(s.ctrs))
	for _, c := range s.ctrs {
		ctrs = append(ctrs, c)
	}
	s.mu.Unlock()
	var wg sync.WaitGroup
	for _, c := range ctrs {
		wg.Add(1)
		go func(c *container) { defer wg.Done(); s.stopContainer(c) }(c)
	}
	wg.Wait()
}

// Status is the service's view of one container.
type Status struct {
	Container int `json:"container"`
	PID       int `json:"pid"`
	Restarts  int `json:"restarts"`
}

func (s *service) status() []Status {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Status
	for _, c := range s.ctrs {
		c.mu.Lock()
		out = append(out, Status{Container: c.id, PID: c.pid, Restarts: c.restarts})
		c.mu.Unlock()
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Container < out[j].Container })
	return out
}

func (s *service) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /status", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(s.status())
	})
	mux.HandleFunc("POST /kill", func(w http.ResponseWriter, r *http.Request) {
		s.stopAll()
		w.WriteHeader(http.StatusOK)
		s.once.Do(func() { close(s.done) })
	})
	mux.HandleFunc("POST /restart", func(w http.ResponseWriter, r *http.Request) {
		if err := s.restart(r.URL.Query().Get("container")); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
		}
	})
	mux.HandleFunc("POST /update", func(w http.ResponseWriter, r *http.Request) {
		var job spi.Job
		if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 64<<20)).Decode(&job); err != nil {
			http.Error(w, "the body is not a job: "+err.Error(), http.StatusBadRequest)
			return
		}
		if err := s.update(job); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
		}
	})
	return mux
}

func (s *service) restart(which string) error {
	s.mu.Lock()
	var targets []*container
	if which == "" {
		for _, c := range s.ctrs {
			targets = append(targets, c)
		}
	} else {
		id, err := strconv.Atoi(which)
		c, ok := s.ctrs[id]
		if err != nil || !ok {
			s.mu.Unlock()
			return fmt.Errorf("no container %q (containers: %v)", which, containerIDs(s.job))
		}
		targets = append(targets, c)
	}
	s.mu.Unlock()
	for _, c := range targets {
		select {
		case c.restart <- struct{}{}:
		default:
		}
	}
	return nil
}

// update adopts a new job: containers new to the plan start, containers
// gone from it stop; the others pick up the new job at their next start
// (their executors follow the packing plan in the state manager).
func (s *service) update(job spi.Job) error {
	want := map[int]bool{}
	for _, id := range containerIDs(job) {
		want[id] = true
	}
	s.mu.Lock()
	if job.Topology != s.job.Topology {
		s.mu.Unlock()
		return errors.New("the job is for another topology")
	}
	if err := writeJSON(filepath.Join(s.cfg.WorkDir, jobFile), job); err != nil {
		s.mu.Unlock()
		return err
	}
	s.job = job
	var gone []*container
	for id, c := range s.ctrs {
		if !want[id] {
			gone = append(gone, c)
			delete(s.ctrs, id)
		}
	}
	for id := range want {
		if _, ok := s.ctrs[id]; !ok {
			s.startLocked(id)
		}
	}
	s.mu.Unlock()
	for _, c := range gone {
		s.stopContainer(c)
	}
	return nil
}
