package shell

import (
	"context"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"go.uber.org/zap"

	"github.com/egret-stream/egret/core/names"
	"github.com/egret-stream/egret/core/spi"
	"github.com/egret-stream/egret/core/state"
	"github.com/egret-stream/egret/daemons/shellapi"
	"github.com/egret-stream/egret/internal/loglevel"
	"github.com/egret-stream/egret/internal/safepath"
	"github.com/egret-stream/egret/proto/egretpb"
)

// SecretHeader carries the topology's secret, hex-encoded.
const SecretHeader = shellapi.SecretHeader

// MaxRead bounds the bytes one log request returns.
const MaxRead = 8 << 20

// Config configures a shell.
type Config struct {
	TopologyName string
	TopologyID   string
	Container    int
	// WorkDir is the container's working directory W.
	WorkDir string
	// Host is the address published in the state manager.
	Host string
	// BindHost and Port are where the server listens ("" all
	// interfaces; 0 any port).
	BindHost string
	Port     int
	// StateManager holds the shell's ephemeral node and gives the secret
	// (nil: no location is published and the POST endpoints refuse).
	StateManager spi.StateManager
	// Ready, when set, receives the listening address.
	Ready func(addr string)
}

// Server serves one container's shell API.
type Server struct {
	cfg     Config
	log     *zap.Logger
	logsDir string
	store   *state.Store
}

// New checks cfg.
func New(cfg Config, log *zap.Logger) (*Server, error) {
	if log == nil {
		log = zap.NewNop()
	}
	if err := names.Check(names.Topology, cfg.TopologyName); err != nil {
		return nil, fmt.Errorf("shell: --topology: %w", err)
	}
	if cfg.Container < 0 {
		return nil, fmt.Errorf("shell: container %d is negative", cfg.Container)
	}
	if cfg.WorkDir == "" {
		return nil, errors.New("shell: a working directory is required (--work-dir)")
	}
	w, err := filepath.Abs(cfg.WorkDir)
	if err != nil {
		return nil, fmt.Errorf("shell: working directory %q: %w", cfg.WorkDir, err)
	}
	cfg.WorkDir = w
	s := &Server{cfg: cfg, log: log, logsDir: filepath.Join(w, "logs")}
	if cfg.StateManager != nil {
		s.store = state.New(cfg.StateManager)
	}
	return s, nil
}

// Run is New followed by Server.Run.
func Run(ctx context.Context, cfg Config, log *zap.Logger) error {
	s, err := New(cfg, log)
	if err != nil {
		return err
	}
	return s.Run(ctx)
}

// Run listens, publishes the location and serves until ctx ends.
func (s *Server) Run(ctx context.Context) error {
	ln, err := net.Listen("tcp", net.JoinHostPort(s.cfg.BindHost, strconv.Itoa(s.cfg.Port)))
	if err != nil {
		return fmt.Errorf("shell: listen on port %d: %w", s.cfg.Port, err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	srv := &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	if s.store != nil {
		loc := &egretpb.ShellLocation{TopologyName: s.cfg.TopologyName, TopologyId: s.cfg.TopologyID, Container: int32(s.cfg.Container),
			Host: s.cfg.Host, Port: int32(port), Pid: int32(os.Getpid())}
		if err := s.store.SetShellLocation(ctx, loc); err != nil {
			_ = srv.Close()
			return fmt.Errorf("shell: publish the location: %w", err)
		}
	}
	s.log.Info("shell listening", zap.String("addr", ln.Addr().String()))
	if s.cfg.Ready != nil {
		s.cfg.Ready(ln.Addr().String())
	}
	select {
	case <-ctx.Done():
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
		return nil
	case err := <-errc:
		return fmt.Errorf("shell: serve: %w", err)
	}
}

// ServeHTTP routes on the raw path, without cleaning it.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	segs := strings.Split(strings.TrimPrefix(r.URL.EscapedPath(), "/"), "/")
	switch {
	case len(segs) == 1 && segs[0] == "logs":
		s.only(w, r, http.MethodGet, s.listLogs)
	case len(segs) == 2 && segs[0] == "logs":
		s.only(w, r, http.MethodGet, func(w http.ResponseWriter, r *http.Request) { s.serveLog(w, r, segs[1]) })
	case len(segs) == 1 && segs[0] == "processes":
		s.only(w, r, http.MethodGet, s.listProcesses)
	case len(segs) == 3 && segs[0] == "processes" && segs[2] == "kill":
		s.only(w, r, http.MethodPost, func(w http.ResponseWriter, r *http.Request) { s.kill(w, r, segs[1]) })
	case len(segs) == 1 && segs[0] == "loglevel":
		if r.Method == http.MethodPost {
			s.setLogLevel(w, r)
			return
		}
		s.only(w, r, http.MethodGet, s.getLogLevel)
	default:
		httpError(w, http.StatusNotFound, "no such endpoint (GET /logs, /logs/<name>, /processes, /loglevel; POST /processes/<name>/kill, /loglevel)")
	}
}

func (s *Server) only(w http.ResponseWriter, r *http.Request, method string, h http.HandlerFunc) {
	if r.Method != method {
		w.Header().Set("Allow", method)
		httpError(w, http.StatusMethodNotAllowed, r.Method+" is not allowed here; use "+method)
		return
	}
	h(w, r)
}

func httpError(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(code)
	fmt.Fprintln(w, strings.ReplaceAll(msg, "\n", " "))
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

// LogFile describes one log file.
type LogFile struct {
	Name    string    `json:"name"`
	Size    int64     `json:"size"`
	ModTime time.Time `json:"mtime"`
}

// logName is what a log file's name may look like.
var logName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)

// logFiles lists the regular files of W/logs (symbolic links and
// everything else are left out).
func (s *Server) logFiles() ([]LogFile, error) {
	ents, err := os.ReadDir(s.logsDir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	out := []LogFile{}
	for _, e := range ents {
		if !e.Type().IsRegular() || !logName.MatchString(e.Name()) {
			continue
		}
		fi, err := e.Info()
		if err != nil {
			continue
		}
		out = append(out, LogFile{Name: e.Name(), Size: fi.Size(), ModTime: fi.ModTime().UTC()})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

func (s *Server) listLogs(w http.ResponseWriter, r *http.Request) {
	files, err := s.logFiles()
	if err != nil {
		httpError(w, http.StatusInternalServerError, "list the logs: "+err.Error())
		return
	}
	writeJSON(w, files)
}

// checkLogName validates the escaped name of a log file: one plain file
// name, listed in W/logs as a regular file. It returns the file's path.
func (s *Server) checkLogName(escaped string) (string, int, error) {
	name, err := url.PathUnescape(escaped)
	if err != nil {
		return "", http.StatusBadRequest, fmt.Errorf("log name %q is not a valid URL path element", escaped)
	}
	if err := safepath.Elem(name); err != nil {
		return "", http.StatusBadRequest, err
	}
	if !logName.MatchString(name) {
		return "", http.StatusBadRequest, fmt.Errorf("log name %s is not a log file name (letters, digits, '.', '-', '_')", strconv.QuoteToASCII(name))
	}
	files, err := s.logFiles()
	if err != nil {
		return "", http.StatusInternalServerError, fmt.Errorf("list the logs: %w", err)
	}
	for _, f := range files {
		if f.Name == name {
			p, err := safepath.Join(s.logsDir, name)
			if err != nil {
				return "", http.StatusBadRequest, err
			}
			return p, 0, nil
		}
	}
	return "", http.StatusNotFound, fmt.Errorf("no log file %q in this container (GET /logs lists them)", name)
}

// openLog opens a regular file without following a symbolic link.
func openLog(p string) (*os.File, os.FileInfo, error) {
	f, err := os.OpenFile(p, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return nil, nil, err
	}
	fi, err := f.Stat()
	if err == nil && !fi.Mode().IsRegular() {
		err = errors.New("not a regular file")
	}
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	return f, fi, nil
}

func (s *Server) serveLog(w http.ResponseWriter, r *http.Request, escaped string) {
	p, code, err := s.checkLogName(escaped)
	if err != nil {
		httpError(w, code, err.Error())
		return
	}
	q := r.URL.Query()
	var offset, length int64 = 0, -1
	ranged := q.Has("offset") || q.Has("length")
	if q.Has("offset") {
		if offset, err = strconv.ParseInt(q.Get("offset"), 10, 64); err != nil {
			httpError(w, http.StatusBadRequest, fmt.Sprintf("offset %q is not an integer", q.Get("offset")))
			return
		}
	}
	if q.Has("length") {
		if length, err = strconv.ParseInt(q.Get("length"), 10, 64); err != nil || length < 0 {
			httpError(w, http.StatusBadRequest, fmt.Sprintf("length %q is not a non-negative integer", q.Get("length")))
			return
		}
	}
	f, fi, err := openLog(p)
	if err != nil {
		httpError(w, http.StatusNotFound, "log file "+filepath.Base(p)+" cannot be opened: "+err.Error())
		return
	}
	defer f.Close()
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set(shellapi.HeaderFileSize, strconv.FormatInt(fi.Size(), 10))
	if !ranged {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		http.ServeContent(w, r, "", fi.ModTime(), f)
		return
	}
	size := fi.Size()
	if offset < 0 {
		offset = max(size+offset, 0)
	}
	offset = min(offset, size)
	n := size - offset
	if length >= 0 {
		n = min(n, length)
	}
	n = min(n, MaxRead)
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set(shellapi.HeaderOffset, strconv.FormatInt(offset, 10))
	w.Header().Set("Content-Length", strconv.FormatInt(n, 10))
	if _, err := f.Seek(offset, io.SeekStart); err != nil {
		httpError(w, http.StatusInternalServerError, "seek: "+err.Error())
		return
	}
	_, _ = io.CopyN(w, f, n)
}

func (s *Server) pidFile() (shellapi.PidFile, error) {
	var pf shellapi.PidFile
	b, err := os.ReadFile(filepath.Join(s.cfg.WorkDir, shellapi.PidsFile))
	if err != nil {
		return pf, fmt.Errorf("read the executor's pid file: %w", err)
	}
	if err := json.Unmarshal(b, &pf); err != nil {
		return pf, fmt.Errorf("decode the executor's pid file: %w", err)
	}
	return pf, nil
}

func (s *Server) processes() ([]shellapi.ProcessStatus, error) {
	pf, err := s.pidFile()
	return pf.Status, err
}

// parentOf returns the parent pid of pid from /proc (ok false where there
// is no /proc, as on macOS); err when the process is gone.
func parentOf(pid int) (ppid int, ok bool, err error) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		return 0, false, nil
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, true, err
	}
	// pid (comm) state ppid ...; comm may hold spaces and parentheses.
	i := strings.LastIndexByte(string(b), ')')
	f := strings.Fields(string(b[i+1:]))
	if i < 0 || len(f) < 2 {
		return 0, true, fmt.Errorf("unexpected /proc/%d/stat", pid)
	}
	ppid, err = strconv.Atoi(f[1])
	return ppid, true, err
}

// Process is one entry of GET /processes.
type Process struct {
	Name      string    `json:"name"`
	Kind      string    `json:"kind"`
	Task      int       `json:"task,omitempty"`
	PID       int       `json:"pid"`
	State     string    `json:"state"`
	Restarts  int       `json:"restarts"`
	StartedAt time.Time `json:"started_at"`
	LastExit  string    `json:"last_exit,omitempty"`
}

func (s *Server) listProcesses(w http.ResponseWriter, r *http.Request) {
	ps, err := s.processes()
	if err != nil {
		httpError(w, http.StatusServiceUnavailable, err.Error())
		return
	}
	out := make([]Process, 0, len(ps))
	for _, p := range ps {
		out = append(out, Process{Name: p.Name, Kind: string(p.Kind), Task: p.Task, PID: p.PID, State: string(p.State),
			Restarts: p.Restarts, StartedAt: p.StartedAt, LastExit: p.LastExit})
	}
	writeJSON(w, out)
}

// authorize checks the secret header; it writes the error response and
// returns false when the request may not proceed.
func (s *Server) authorize(w http.ResponseWriter, r *http.Request) bool {
	h := r.Header.Get(SecretHeader)
	if h == "" {
		httpError(w, http.StatusUnauthorized, "this endpoint needs the topology's secret in the "+SecretHeader+" header")
		return false
	}
	got, err := hex.DecodeString(h)
	if err != nil {
		httpError(w, http.StatusForbidden, "wrong secret")
		return false
	}
	if s.store == nil {
		httpError(w, http.StatusServiceUnavailable, "this shell has no state manager to read the secret from")
		return false
	}
	want, err := s.store.Secret(r.Context(), s.cfg.TopologyName)
	if err != nil {
		s.log.Warn("cannot read the topology secret", zap.Error(err))
		httpError(w, http.StatusServiceUnavailable, "cannot read the topology secret: "+err.Error())
		return false
	}
	if subtle.ConstantTimeCompare(got, want) != 1 {
		httpError(w, http.StatusForbidden, "wrong secret")
		return false
	}
	return true
}

// processName is what a process name may look like.
var processName = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_-]*$`)

func (s *Server) kill(w http.ResponseWriter, r *http.Request, escaped string) {
	name, err := url.PathUnescape(escaped)
	if err != nil || safepath.Elem(name) != nil || !processName.MatchString(name) {
		httpError(w, http.StatusBadRequest, fmt.Sprintf("process name %q is not valid", escaped))
		return
	}
	if !s.authorize(w, r) {
		return
	}
	pf, err := s.pidFile()
	if err != nil {
		httpError(w, http.StatusServiceUnavailable, err.Error())
		return
	}
	ps := pf.Status
	var target *shellapi.ProcessStatus
	for i := range ps {
		if ps[i].Name == name {
			target = &ps[i]
		}
	}
	switch {
	case target == nil:
		httpError(w, http.StatusNotFound, fmt.Sprintf("no process %q in this container (GET /processes lists them)", name))
		return
	case target.PID <= 0:
		httpError(w, http.StatusConflict, fmt.Sprintf("process %q is not running (%s)", name, target.State))
		return
	case target.PID == os.Getpid():
		httpError(w, http.StatusBadRequest, "the shell does not kill itself")
		return
	}
	// The pid file may lag behind an exit: kill only a child of the
	// executor, never whatever process reused the pid.
	if ppid, ok, err := parentOf(target.PID); ok && (err != nil || ppid != pf.Executor) {
		httpError(w, http.StatusConflict, fmt.Sprintf("process %q (pid %d) is not running as a child of the executor (pid %d); try again", name, target.PID, pf.Executor))
		return
	}
	// Every child leads its own process group (the executor starts it
	// with Setpgid): the whole group goes.
	if err := syscall.Kill(-target.PID, syscall.SIGKILL); err != nil {
		httpError(w, http.StatusInternalServerError, fmt.Sprintf("kill process %q (pid %d): %v", name, target.PID, err))
		return
	}
	s.log.Info("killed a process on request", zap.String("process", name), zap.Int("pid", target.PID), zap.String("remote", r.RemoteAddr))
	writeJSON(w, map[string]any{"killed": name, "pid": target.PID})
}

// LogLevelRequest is the body of POST /loglevel.
type LogLevelRequest = shellapi.LogLevelRequest

func (s *Server) levelFile() string { return filepath.Join(s.cfg.WorkDir, loglevel.FileName) }

func (s *Server) setLogLevel(w http.ResponseWriter, r *http.Request) {
	var req LogLevelRequest
	dec := json.NewDecoder(io.LimitReader(r.Body, 4096))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		httpError(w, http.StatusBadRequest, "decode the request: "+err.Error())
		return
	}
	if _, err := loglevel.ParseLevel(req.Level); err != nil {
		httpError(w, http.StatusBadRequest, err.Error())
		return
	}
	if req.Component != "" {
		if err := names.Check(names.Component, req.Component); err != nil {
			httpError(w, http.StatusBadRequest, err.Error())
			return
		}
	}
	d, err := time.ParseDuration(req.Duration)
	if err != nil || d <= 0 || d > loglevel.MaxDuration {
		httpError(w, http.StatusBadRequest, fmt.Sprintf("duration %q must be positive and at most %s", req.Duration, loglevel.MaxDuration))
		return
	}
	if !s.authorize(w, r) {
		return
	}
	o := loglevel.Override{Level: req.Level, Component: req.Component, Expires: time.Now().Add(d).UTC()}
	if err := loglevel.Write(s.levelFile(), o); err != nil {
		httpError(w, http.StatusInternalServerError, err.Error())
		return
	}
	s.log.Info("log level override set", zap.String("level", o.Level), zap.String("component", o.Component), zap.Time("expires", o.Expires))
	writeJSON(w, o)
}

func (s *Server) getLogLevel(w http.ResponseWriter, r *http.Request) {
	o, err := loglevel.Read(s.levelFile())
	if err != nil {
		httpError(w, http.StatusInternalServerError, err.Error())
		return
	}
	writeJSON(w, o)
}
