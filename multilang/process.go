package multilang

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"go.uber.org/zap"
)

// Defaults of Config.
const (
	DefaultMaxMessageBytes  = 4 << 20
	DefaultQueueSize        = 1024
	DefaultStartTimeout     = 60 * time.Second
	DefaultHeartbeatTimeout = 30 * time.Second
	// heartbeatEvery is how often a bolt subprocess gets a heartbeat
	// tuple (Storm's ShellBolt: every second).
	heartbeatEvery = time.Second
	// stopGrace is how long Close waits for a subprocess to exit after
	// closing its stdin, before killing it.
	stopGrace = 2 * time.Second
	// maxStderrLine bounds a logged line of the subprocess's stderr.
	maxStderrLine = 16 << 10
)

// ErrHung is the cause of a subprocess killed for not answering.
var ErrHung = errors.New("the subprocess did not answer in time (heartbeat timeout)")

// Config describes a subprocess to run.
type Config struct {
	// Command is the executable (a path, or a name looked up in the PATH
	// of Env) and Args its arguments.
	Command string
	Args    []string
	// Dir is the working directory.
	Dir string
	// Env is the environment (nil: the instance's).
	Env []string
	// PidDir is the directory the subprocess writes its pid file into
	// (created; emptied first).
	PidDir string
	// Conf and Context are the handshake's "conf" and "context".
	Conf, Context map[string]any
	// MaxMessageBytes bounds one message from the subprocess.
	MaxMessageBytes int
	// QueueSize bounds, in messages, the queue toward the subprocess and
	// the queue of messages read from it, each.
	QueueSize int
	// StartTimeout bounds the handshake.
	StartTimeout time.Duration
	// HeartbeatTimeout is how long the subprocess may stay silent while
	// an answer (a sync) is awaited, or at all with Heartbeats, before it
	// is killed as hung.
	HeartbeatTimeout time.Duration
	// Heartbeats makes the process send Storm's heartbeat tuple every
	// second (bolts), which a subprocess answers with a sync.
	Heartbeats bool
	// Wake, when set, gets a value (without blocking) whenever a message
	// was queued for In and when the process has ended.
	Wake   chan<- struct{}
	Logger *zap.Logger
	// OnTraceback, when set, is called with every Python traceback the
	// subprocess writes to its stderr, assembled (from the goroutine
	// reading stderr).
	OnTraceback func(Traceback)
}

func (c *Config) defaults() {
	if c.MaxMessageBytes <= 0 {
		c.MaxMessageBytes = DefaultMaxMessageBytes
	}
	if c.QueueSize <= 0 {
		c.QueueSize = DefaultQueueSize
	}
	if c.StartTimeout <= 0 {
		c.StartTimeout = DefaultStartTimeout
	}
	if c.HeartbeatTimeout <= 0 {
		c.HeartbeatTimeout = DefaultHeartbeatTimeout
	}
	if c.Logger == nil {
		c.Logger = zap.NewNop()
	}
}

// Process is a running subprocess speaking the multilang protocol. Its
// owner (one goroutine) sends with Out, receives with In, and learns of
// its end with Done; a reader and a writer goroutine move the messages,
// a watchdog kills it when it hangs.
type Process struct {
	cfg    Config
	log    *zap.Logger
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	pid    int
	in     chan *Message
	out    chan []byte
	done   chan struct{} // closed once the process is gone and In holds all it sent
	quit   chan struct{} // closed to stop the writer and the watchdog
	once   sync.Once
	mu     sync.Mutex
	cause  error // why the process ended (first reason wins)
	exit   string
	lastTB *Traceback
	heard  atomic.Int64 // unix nanos of the last message
	await  atomic.Int64 // answers (syncs) awaited
	since  atomic.Int64 // unix nanos when await became non-zero
	stderr sync.WaitGroup
	// beatMu orders the heartbeat tuples queued by the watchdog and by
	// AskSync; beats counts them.
	beatMu sync.Mutex
	beats  uint64
}

// Start starts the subprocess, performs the handshake and returns the
// running process. ctx bounds the start only.
func Start(ctx context.Context, cfg Config) (*Process, error) {
	cfg.defaults()
	if err := resetDir(cfg.PidDir); err != nil {
		return nil, fmt.Errorf("pid directory: %w", err)
	}
	cmd := exec.Command(cfg.Command, cfg.Args...)
	cmd.Dir = cfg.Dir
	cmd.Env = cfg.Env
	cmd.SysProcAttr = sysProcAttr()
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", cfg.Command, err)
	}
	p := &Process{
		cfg:   cfg,
		log:   cfg.Logger.With(zap.Int("subprocess_pid", cmd.Process.Pid)),
		cmd:   cmd,
		stdin: stdin,
		pid:   cmd.Process.Pid,
		in:    make(chan *Message, cfg.QueueSize),
		out:   make(chan []byte, cfg.QueueSize),
		done:  make(chan struct{}),
		quit:  make(chan struct{}),
	}
	p.stderr.Add(1)
	go p.logStderr(stderr)
	rd := NewReader(stdout, cfg.MaxMessageBytes)
	pid, err := p.handshake(ctx, rd)
	if err != nil {
		p.Kill(err)
		p.finish()
		err = fmt.Errorf("handshake with %s (%s): %w", cfg.Command, p.exit, err)
		if tb := p.LastTraceback(); tb != nil {
			// A subprocess that raised before answering (an import
			// error): say what it raised, with the traceback.
			err = &TracebackError{Err: err, Traceback: *tb}
		}
		return nil, err
	}
	if pid != p.pid {
		// A wrapper (a shell script) that did not exec its interpreter.
		p.log.Info("the subprocess reported another pid than the one started", zap.Int("reported_pid", pid))
	}
	p.heard.Store(time.Now().UnixNano())
	go p.read(rd)
	go p.write()
	go p.watch()
	return p, nil
}

// resetDir creates dir and removes what it holds.
func resetDir(dir string) error {
	if dir == "" {
		return errors.New("no directory given")
	}
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	return os.MkdirAll(dir, 0o755)
}

func (p *Process) handshake(ctx context.Context, rd *Reader) (int, error) {
	setup := map[string]any{"pidDir": p.cfg.PidDir, "conf": p.cfg.Conf, "context": p.cfg.Context}
	b, err := AppendValue(nil, setup)
	if err != nil {
		return 0, fmt.Errorf("encode the handshake: %w", err)
	}
	type reply struct {
		m   *Message
		err error
	}
	ch := make(chan reply, 1)
	go func() {
		if _, err := p.stdin.Write(AppendFrame(b)); err != nil {
			ch <- reply{err: fmt.Errorf("write the handshake: %w", err)}
			return
		}
		data, err := rd.Next()
		if err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
				err = errors.New("the subprocess closed its stdout before answering (see its stderr in the log)")
			}
			ch <- reply{err: err}
			return
		}
		m, err := Decode(data)
		if err == nil && m.Command != "" {
			err = fmt.Errorf("%w: want the handshake reply {\"pid\": N}, got command %q", ErrProtocol, m.Command)
		}
		if err != nil {
			err = fmt.Errorf("%w (message: %s)", err, excerpt(data))
		}
		ch <- reply{m: m, err: err}
	}()
	t := time.NewTimer(p.cfg.StartTimeout)
	defer t.Stop()
	select {
	case r := <-ch:
		if r.err != nil {
			return 0, r.err
		}
		if _, err := os.Stat(filepath.Join(p.cfg.PidDir, strconv.Itoa(r.m.Pid))); err != nil {
			p.log.Warn("the subprocess wrote no pid file into the pid directory", zap.String("pid_dir", p.cfg.PidDir))
		}
		return r.m.Pid, nil
	case <-t.C:
		return 0, fmt.Errorf("no handshake reply within %s", p.cfg.StartTimeout)
	case <-ctx.Done():
		return 0, ctx.Err()
	}
}

// Pid is the process id of the subprocess.
func (p *Process) Pid() int { return p.pid }

// In delivers the messages read from the subprocess, in order. Syncs are
// delivered too (after they were counted against Expect).
func (p *Process) In() <-chan *Message { return p.in }

// Out takes framed messages to write to the subprocess; it blocks when
// the queue is full (back pressure from the subprocess).
func (p *Process) Out() chan<- []byte { return p.out }

// Done is closed once the process has ended and In holds every message
// it sent.
func (p *Process) Done() <-chan struct{} { return p.done }

// Expect notes that n more answers (syncs) are awaited: while any is, a
// subprocess silent for the heartbeat timeout is killed.
func (p *Process) Expect(n int) {
	if p.await.Add(int64(n)) == int64(n) {
		p.since.Store(time.Now().UnixNano())
	}
}

// AskSync queues Storm's heartbeat tuple unless the queue toward the
// subprocess is full (ok false: handle its messages and ask again). The
// subprocess answers each heartbeat with a sync once it has processed
// everything queued before it, so once its n-th sync (counted from its
// start, answers to the watchdog's heartbeats included) has been handled,
// every tuple queued before the call has been processed and what it
// emitted handled: the barrier of a drain. A bolt subprocess sends no
// sync of its own except after an error (pystorm), which can end the
// barrier one answer early.
func (p *Process) AskSync() (n uint64, ok bool) { return p.queueBeat() }

// queueBeat queues a heartbeat tuple if there is room and returns how
// many have been queued.
func (p *Process) queueBeat() (uint64, bool) {
	p.beatMu.Lock()
	defer p.beatMu.Unlock()
	select {
	case p.out <- heartbeat:
	default:
		return p.beats, false
	}
	p.beats++
	p.Expect(1)
	return p.beats, true
}

// Err says why the process ended (nil while it runs).
func (p *Process) Err() error {
	select {
	case <-p.done:
	default:
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cause != nil {
		return fmt.Errorf("%w (%s)", p.cause, p.exit)
	}
	return errors.New(p.exit)
}

// Kill kills the subprocess, recording cause as the reason.
func (p *Process) Kill(cause error) {
	p.mu.Lock()
	if p.cause == nil {
		p.cause = cause
	}
	p.mu.Unlock()
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
}

// Close ends the subprocess: its stdin is closed (a pystorm component
// exits), and it is killed if still running after a grace period. Close
// returns once it is gone.
func (p *Process) Close() {
	p.stop()
	_ = p.stdin.Close()
	t := time.NewTimer(stopGrace)
	defer t.Stop()
	select {
	case <-p.done:
		return
	case <-t.C:
	}
	p.Kill(errors.New("stopped"))
	// The reader ends now; drain what it still queues.
	for {
		select {
		case <-p.in:
		case <-p.done:
			return
		}
	}
}

func (p *Process) stop() { p.once.Do(func() { close(p.quit) }) }

// finish reaps the process once its stdout is consumed.
func (p *Process) finish() {
	p.stop()
	err := p.cmd.Wait()
	p.stderr.Wait()
	exit := "exited"
	if ps := p.cmd.ProcessState; ps != nil {
		exit = "subprocess " + ps.String()
	} else if err != nil {
		exit = err.Error()
	}
	p.mu.Lock()
	p.exit = exit
	p.mu.Unlock()
}

func (p *Process) wake() {
	if p.cfg.Wake != nil {
		select {
		case p.cfg.Wake <- struct{}{}:
		default:
		}
	}
}

// read moves messages from the subprocess to In until it ends or breaks
// the protocol, then kills and reaps it.
func (p *Process) read(rd *Reader) {
	defer func() {
		p.finish()
		close(p.done)
		p.wake()
	}()
	for {
		data, err := rd.Next()
		if err != nil {
			switch {
			case errors.Is(err, io.EOF):
				p.Kill(errors.New("the subprocess closed its stdout"))
			case errors.Is(err, io.ErrUnexpectedEOF):
				p.Kill(errors.New("the subprocess closed its stdout in the middle of a message"))
			default:
				p.Kill(err)
			}
			return
		}
		m, err := Decode(data)
		if err != nil {
			p.Kill(fmt.Errorf("%w (message: %s)", err, excerpt(data)))
			return
		}
		p.heard.Store(time.Now().UnixNano())
		if m.Command == CmdSync {
			if p.await.Add(-1) < 0 {
				p.await.Store(0) // an unasked sync (pystorm sends one after an error)
			}
			p.since.Store(time.Now().UnixNano())
		}
		select {
		case p.in <- m:
			p.wake()
		case <-p.quit:
			p.Kill(errors.New("stopped"))
			return
		}
	}
}

// write writes queued messages, flushing whenever the queue is empty.
func (p *Process) write() {
	w := bufio.NewWriterSize(p.stdin, 64<<10)
	for {
		var b []byte
		select {
		case b = <-p.out:
		case <-p.quit:
			return
		}
		if _, err := w.Write(b); err != nil {
			p.Kill(fmt.Errorf("write to the subprocess: %w", err))
			return
		}
		if len(p.out) == 0 {
			if err := w.Flush(); err != nil {
				p.Kill(fmt.Errorf("write to the subprocess: %w", err))
				return
			}
		}
	}
}

// watch sends heartbeats and kills a subprocess that stays silent for the
// heartbeat timeout while an answer is awaited.
func (p *Process) watch() {
	timeout := p.cfg.HeartbeatTimeout
	tick := min(timeout/4, heartbeatEvery)
	t := time.NewTicker(tick)
	defer t.Stop()
	var lastBeat time.Time
	for {
		select {
		case <-t.C:
		case <-p.quit:
			return
		}
		now := time.Now()
		// With heartbeats a healthy subprocess answers every second, busy
		// or idle (a heartbeat that cannot even be queued behind the
		// tuples counts as unanswered); without, only while a command
		// waits for its answer.
		last := p.heard.Load()
		if !p.cfg.Heartbeats {
			last = max(last, p.since.Load())
		}
		if p.cfg.Heartbeats || p.await.Load() > 0 {
			if silent := now.Sub(time.Unix(0, last)); silent > timeout {
				p.log.Error("killing a hung subprocess", zap.Duration("silent_for", silent.Round(time.Millisecond)), zap.Duration("timeout", timeout))
				p.Kill(fmt.Errorf("%w: silent for %s", ErrHung, silent.Round(time.Millisecond)))
				return
			}
		}
		if p.cfg.Heartbeats && now.Sub(lastBeat) >= heartbeatEvery {
			if _, ok := p.queueBeat(); ok {
				lastBeat = now
			} // else the queue is full: the subprocess is busy, or hung (the awaited answers tell)
		}
	}
}

// tracebackQuiet is how long an assembled traceback waits for a chained
// one before it is logged.
const tracebackQuiet = 200 * time.Millisecond

// logStderr copies the subprocess's stderr into the log, line by line,
// except tracebacks: each is assembled into one entry (see tracebacks)
// and handed to Config.OnTraceback.
func (p *Process) logStderr(r io.Reader) {
	defer p.stderr.Done()
	lines := make(chan stderrLine, 64)
	go readLines(r, lines)
	var tb tracebacks
	var quiet <-chan time.Time
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				p.traceback(tb.flush())
				return
			}
			done, taken := tb.feed(l.text)
			p.traceback(done)
			if !taken && l.text != "" {
				p.log.Info("subprocess stderr", zap.String("line", l.text), zap.Bool("truncated", l.truncated))
			}
			quiet = nil
			if tb.pending() {
				quiet = time.After(tracebackQuiet)
			}
		case <-quiet:
			p.traceback(tb.flush())
			quiet = nil
		}
	}
}

type stderrLine struct {
	text      string
	truncated bool
}

// readLines sends the lines of r (each at most maxStderrLine bytes; the
// rest of a longer line is skipped) until r ends, then closes out.
func readLines(r io.Reader, out chan<- stderrLine) {
	defer close(out)
	br := bufio.NewReaderSize(r, maxStderrLine)
	for {
		line, isPrefix, err := br.ReadLine()
		if len(line) > 0 || err == nil {
			out <- stderrLine{text: string(line), truncated: isPrefix}
			for isPrefix && err == nil { // skip the rest of a long line
				_, isPrefix, err = br.ReadLine()
			}
		}
		if err != nil {
			return
		}
	}
}

// traceback logs an assembled traceback as one entry, keeps it as the
// last, and hands it on.
func (p *Process) traceback(tb *Traceback) {
	if tb == nil {
		return
	}
	p.log.Error("subprocess traceback", zap.String("exception", tb.Message), zap.String("traceback", tb.Text))
	p.mu.Lock()
	p.lastTB = tb
	p.mu.Unlock()
	if p.cfg.OnTraceback != nil {
		p.cfg.OnTraceback(*tb)
	}
}

// LastTraceback returns the last traceback the subprocess wrote to its
// stderr (nil when none). After Done, it includes the tracebacks written
// before the subprocess ended.
func (p *Process) LastTraceback() *Traceback {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.lastTB
}

// excerpt shows the start of a bad message in an error.
func excerpt(b []byte) string {
	const n = 120
	if len(b) > n {
		return strconv.Quote(string(b[:n])) + "..."
	}
	return strconv.Quote(string(b))
}
