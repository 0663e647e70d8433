package scale

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/egret-stream/egret/core/spi"
	"github.com/egret-stream/egret/daemons/tmanager"
	"github.com/egret-stream/egret/statemgr/localfs"
)

// childEnv carries the child's settings (JSON); its presence makes
// ChildMain run the topology manager.
const childEnv = "EGRET_SCALE_TMANAGER"

// childSpec is what the topology manager child runs with.
type childSpec struct {
	Root     string            `json:"root"`
	Name     string            `json:"name"`
	ID       string            `json:"id"`
	Settings map[string]string `json:"settings"`
	Log      string            `json:"log"`
}

// ChildMain runs the topology manager and exits when this process was
// started as Run's child; otherwise it returns at once.
func ChildMain() {
	spec := os.Getenv(childEnv)
	if spec == "" {
		return
	}
	if err := runChild(spec); err != nil {
		fmt.Fprintln(os.Stderr, "scale tmanager child:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

func runChild(raw string) error {
	var s childSpec
	if err := json.Unmarshal([]byte(raw), &s); err != nil {
		return fmt.Errorf("bad %s: %w", childEnv, err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	// The parent holds our stdin: its end (a crash included) ends us.
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		stop()
	}()
	lf, err := os.OpenFile(s.Log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer lf.Close()
	enc := zap.NewProductionEncoderConfig()
	enc.EncodeTime = zapcore.ISO8601TimeEncoder
	log := zap.New(zapcore.NewCore(zapcore.NewJSONEncoder(enc), zapcore.AddSync(lf), zap.InfoLevel))
	sm, err := localfs.Open(localfs.Options{Root: s.Root, Logger: log.Named("statemgr")})
	if err != nil {
		return err
	}
	defer sm.Close()
	cfg := tmanager.Config{
		TopologyName: s.Name, TopologyID: s.ID, Host: "127.0.0.1", BindHost: "127.0.0.1",
		StateManager: sm, Settings: spi.Config(s.Settings),
		Ready: func(ep tmanager.Endpoints) {
			fmt.Printf("READY %s %s\n", ep.ServerAddr, ep.HTTPAddr)
		},
	}
	return tmanager.Run(ctx, cfg, log.Named("tmanager"))
}

// child is the running topology manager process.
type child struct {
	cmd        *exec.Cmd
	stdin      io.Closer
	serverAddr string
	httpAddr   string
	exited     chan struct{}
	err        error
}

// startChild starts the topology manager child and waits until it serves.
func startChild(ctx context.Context, self string, spec childSpec, timeout time.Duration) (*child, error) {
	raw, err := json.Marshal(spec)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(self)
	cmd.Env = append(os.Environ(), childEnv+"="+string(raw))
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	var stderr strings.Builder
	cmd.Stderr = &limitedWriter{w: &stderr, n: 8 << 10}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start the topology manager child %s: %w", self, err)
	}
	c := &child{cmd: cmd, stdin: stdin, exited: make(chan struct{})}
	ready := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if line := sc.Text(); strings.HasPrefix(line, "READY ") {
				select {
				case ready <- line:
				default:
				}
			}
		}
	}()
	go func() {
		c.err = cmd.Wait()
		close(c.exited)
	}()
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case line := <-ready:
		f := strings.Fields(line)
		if len(f) != 3 {
			c.stop()
			return nil, fmt.Errorf("topology manager child: unexpected %q", line)
		}
		c.serverAddr, c.httpAddr = f[1], f[2]
		return c, nil
	case <-c.exited:
		return nil, fmt.Errorf("the topology manager child exited before serving (%v): %s", c.err, stderr.String())
	case <-t.C:
		c.stop()
		return nil, fmt.Errorf("the topology manager child did not serve within %s (see %s)", timeout, spec.Log)
	case <-ctx.Done():
		c.stop()
		return nil, ctx.Err()
	}
}

// stop ends the child: SIGTERM, then SIGKILL after 10 s; it always reaps it.
func (c *child) stop() {
	_ = c.cmd.Process.Signal(syscall.SIGTERM)
	_ = c.stdin.Close()
	select {
	case <-c.exited:
	case <-time.After(10 * time.Second):
		_ = c.cmd.Process.Kill()
		<-c.exited
	}
}

func (c *child) pid() int { return c.cmd.Process.Pid }

// limitedWriter keeps the first n bytes written to it.
type limitedWriter struct {
	w io.Writer
	n int
}

func (l *limitedWriter) Write(p []byte) (int, error) {
	if l.n > 0 {
		k := min(len(p), l.n)
		_, _ = l.w.Write(p[:k])
		l.n -= k
	}
	return len(p), nil
}

var errChildExited = errors.New("the topology manager child exited")
