package zktest

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Jar is the ZooKeeper server jar of Debian's zookeeper package. Its
// manifest Class-Path names the dependency jars in /usr/share/java, so it is
// the whole classpath.
const Jar = "/usr/share/java/zookeeper.jar"

// ClasspathEnv overrides the classpath (for a ZooKeeper not from Debian).
const ClasspathEnv = "EGRET_ZOOKEEPER_CLASSPATH"

// RequireEnv, when "1", turns a missing Java or ZooKeeper into a test
// failure instead of a skip (set it in CI).
const RequireEnv = "EGRET_REQUIRE_ZK"

// DefaultTickTime is the server tick of Start. ZooKeeper clamps session
// timeouts to [2, 20] ticks, so 250ms allows sessions of 0.5s to 5s.
const DefaultTickTime = 250 * time.Millisecond

// startWait bounds how long a server may take to answer.
const startWait = 60 * time.Second

// Server is a standalone ZooKeeper server process run by a test.
type Server struct {
	// Addr is host:port of the client port.
	Addr string

	t       testing.TB
	port    int
	dataDir string
	tick    time.Duration
	java    string
	cp      string
	mu      sync.Mutex
	cmd     *exec.Cmd
	exited  chan struct{}
	logFile string
	stopped bool
}

// Option configures StartServer.
type Option func(*Server)

// WithTickTime sets the server's tickTime.
func WithTickTime(d time.Duration) Option {
	return func(s *Server) { s.tick = d }
}

// Start runs a fresh ZooKeeper server for the test and returns its address.
// The server is killed when the test ends. Without Java or Debian's
// zookeeper package the test is skipped (failed when EGRET_REQUIRE_ZK=1).
func Start(t testing.TB) string {
	t.Helper()
	return StartServer(t).Addr
}

// StartServer is Start returning the server, which can be stopped and
// restarted.
func StartServer(t testing.TB, opts ...Option) *Server {
	t.Helper()
	java, cp, err := locate()
	if err != nil {
		if os.Getenv(RequireEnv) == "1" {
			t.Fatalf("zktest: %v (%s=1 requires a real ZooKeeper; run `make test-deps`)", err, RequireEnv)
		}
		t.Skipf("zktest: %v; run `make test-deps` (apt-get install zookeeper) to run this test", err)
	}
	s := &Server{t: t, dataDir: t.TempDir(), tick: DefaultTickTime, java: java, cp: cp}
	for _, o := range opts {
		o(s)
	}
	s.logFile = filepath.Join(s.dataDir, "zookeeper.log")
	t.Cleanup(s.Stop)
	var lastErr error
	for attempt := 0; attempt < 3; attempt++ {
		s.port, err = freePort()
		if err != nil {
			t.Fatalf("zktest: %v", err)
		}
		s.Addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port))
		if lastErr = s.start(); lastErr == nil {
			return s
		}
		s.Stop()
	}
	t.Fatalf("zktest: %v", lastErr)
	return nil
}

func locate() (java, cp string, err error) {
	java, err = exec.LookPath("java")
	if err != nil {
		return "", "", errors.New("java not found on PATH")
	}
	if cp = os.Getenv(ClasspathEnv); cp != "" {
		return java, cp, nil
	}
	if _, err := os.Stat(Jar); err != nil {
		return "", "", fmt.Errorf("ZooKeeper server jar %s not found (Debian package zookeeper)", Jar)
	}
	return java, Jar, nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// start launches the process and waits until it serves requests.
func (s *Server) start() error {
	logf, err := os.OpenFile(s.logFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer logf.Close()
	cmd := exec.Command(s.java,
		"-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xshare:auto",
		"-Dzookeeper.admin.enableServer=false",
		"-Dzookeeper.4lw.commands.whitelist=srvr,ruok",
		"-cp", s.cp,
		"org.apache.zookeeper.server.ZooKeeperServerMain",
		strconv.Itoa(s.port), s.dataDir, strconv.Itoa(int(s.tick/time.Millisecond)))
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start ZooKeeper: %w", err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	s.mu.Lock()
	s.cmd, s.exited, s.stopped = cmd, exited, false
	s.mu.Unlock()

	deadline := time.Now().Add(startWait)
	for {
		if Ready(s.Addr) {
			return nil
		}
		select {
		case <-exited:
			return fmt.Errorf("ZooKeeper on port %d exited during startup; log:\n%s", s.port, tail(s.logFile))
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("ZooKeeper on %s not serving after %v; log:\n%s", s.Addr, startWait, tail(s.logFile))
		}
	}
}

// Ready reports whether the ZooKeeper at addr serves requests (its srvr
// four-letter word reports a mode).
func Ready(addr string) bool {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return false
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := c.Write([]byte("srvr")); err != nil {
		return false
	}
	sc := bufio.NewScanner(c)
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), "Mode:") {
			return true
		}
	}
	return false
}

func tail(path string) string {
	b, _ := os.ReadFile(path)
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(bytes.TrimSpace(b))
}

// Stop kills the server and its process group and waits for it to exit.
// The data directory is kept, so Restart brings the same tree (and the
// sessions that have not expired) back.
func (s *Server) Stop() {
	s.mu.Lock()
	cmd, exited, done := s.cmd, s.exited, s.stopped
	s.stopped = true
	s.mu.Unlock()
	if cmd == nil || done {
		return
	}
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	select {
	case <-exited:
	case <-time.After(30 * time.Second):
		s.t.Errorf("zktest: ZooKeeper pid %d did not exit after SIGKILL", cmd.Process.Pid)
	}
}

// Restart stops the server and starts it again on the same port and data
// directory.
func (s *Server) Restart() {
	s.t.Helper()
	s.Stop()
	var err error
	for attempt := 0; attempt < 20; attempt++ {
		if err = s.start(); err == nil {
			return
		}
		s.Stop()
		// The port may linger briefly after the kill.
		time.Sleep(250 * time.Millisecond)
	}
	s.t.Fatalf("zktest: restart: %v", err)
}
