package api

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/egret-stream/egret/core/topology"
	"github.com/egret-stream/egret/multilang"
)

// Restart backoff of a shell component's subprocess: the first restart
// is immediate, the next ones wait twice as long each time, up to
// shellBackoffMax; a subprocess that ran shellBackoffReset resets it.
const (
	shellBackoffMin   = 250 * time.Millisecond
	shellBackoffMax   = 10 * time.Second
	shellBackoffReset = time.Minute
)

// shellRunner runs the subprocess of a shell spout or bolt: its start
// with the handshake, the messages both share (log, error, metrics) and
// its restart after a crash, a hang or a protocol error. Every method runs
// on the task's goroutine.
type shellRunner struct {
	spec   *Shell
	ctx    Context
	log    *zap.Logger
	report func(error)
	wake   chan struct{} // handed to each process (bolts)
	beats  bool          // bolts get heartbeat tuples
	proc   *multilang.Process
	// gen counts the processes started; ids given to a process are only
	// valid for its generation.
	gen       uint64
	startedAt time.Time
	restartAt time.Time
	backoff   time.Duration
	backlog   []*multilang.Message // read while a send waited for room
	syncs     uint64               // syncs the process sent, handed out by next
	warned    int                  // warnings of warnOnce given
}

// open starts the first subprocess: a component that cannot start fails
// to open (the instance reports it and is restarted).
func (r *shellRunner) open(ctx Context, report func(error)) error {
	if r.spec == nil {
		return errors.New("shell component without a command")
	}
	r.ctx, r.report = ctx, report
	r.log = ctx.Logger().With(zap.String("command", r.spec.command))
	return r.start()
}

// setting returns a component setting.
func (r *shellRunner) setting(key string) string {
	return r.ctx.Topology().Setting(r.ctx.ComponentName(), key)
}

func (r *shellRunner) duration(key string, def time.Duration) time.Duration {
	if d, err := time.ParseDuration(r.setting(key)); err == nil && d > 0 {
		return d
	}
	return def
}

func (r *shellRunner) start() error {
	dir := r.ctx.ResourcesDir()
	path := splitPath(r.setting(topology.KeyMultilangPath), dir)
	command, err := lookCommand(r.spec.command, dir, path)
	if err != nil {
		return err
	}
	queue, _ := strconv.Atoi(r.setting(topology.KeyMultilangQueueSize))
	maxMsg, _ := topology.ParseBytes(r.setting(topology.KeyMultilangMaxMessageBytes))
	if maxMsg > 1<<30 {
		maxMsg = 1 << 30
	}
	cfg := multilang.Config{
		Command:          command,
		Args:             r.spec.args,
		Dir:              dir,
		Env:              shellEnv(path, r.spec.env),
		PidDir:           filepath.Join(os.TempDir(), "egret-multilang", r.ctx.TopologyID(), strconv.Itoa(r.ctx.TaskID())),
		Conf:             stormConf(r.ctx),
		Context:          stormContext(r.ctx),
		MaxMessageBytes:  int(maxMsg),
		QueueSize:        queue,
		StartTimeout:     r.duration(topology.KeyMultilangStartTimeout, multilang.DefaultStartTimeout),
		HeartbeatTimeout: r.duration(topology.KeyMultilangHeartbeatTimeout, multilang.DefaultHeartbeatTimeout),
		Heartbeats:       r.beats,
		Wake:             r.wake,
		Logger:           r.log,
		// A traceback on stderr is one exception with the traceback as
		// its stack (ReportError is safe from any goroutine).
		OnTraceback: func(tb multilang.Traceback) {
			r.report(&StackError{Message: fmt.Sprintf("subprocess of %s: %s", r.ctx.ComponentName(), tb.Message), Stack: tb.Text})
		},
	}
	p, err := multilang.Start(context.Background(), cfg)
	if err != nil {
		return fmt.Errorf("shell component %s/%d: %w", r.ctx.ComponentName(), r.ctx.TaskID(), err)
	}
	r.proc = p
	r.syncs = 0
	r.gen++
	r.startedAt = time.Now()
	r.log.Info("subprocess started", zap.Int("subprocess_pid", p.Pid()), zap.String("path", command),
		zap.Strings("args", r.spec.args), zap.String("dir", dir))
	r.ctx.Counter("multilang.starts").Inc()
	return nil
}

// ensure makes sure a subprocess runs: when none does and its restart
// is due, it starts one. With wait it sleeps until the restart is due and
// retries until a start succeeds. It reports whether a process runs.
func (r *shellRunner) ensure(wait bool) bool {
	for r.proc == nil {
		if d := time.Until(r.restartAt); d > 0 {
			if !wait {
				return false
			}
			time.Sleep(d)
		}
		if err := r.start(); err != nil {
			r.log.Error("cannot restart the subprocess", zap.Error(err))
			r.report(err)
			r.schedule()
			if !wait {
				return false
			}
		}
	}
	return true
}

// schedule sets when the next start is due.
func (r *shellRunner) schedule() {
	if time.Since(r.startedAt) >= shellBackoffReset {
		r.backoff = 0
	}
	r.restartAt = time.Now().Add(r.backoff)
	r.backoff = min(max(2*r.backoff, shellBackoffMin), shellBackoffMax)
	if r.wake != nil {
		time.AfterFunc(time.Until(r.restartAt), func() {
			select {
			case r.wake <- struct{}{}:
			default:
			}
		})
	}
}

// ended records the end of the process (its messages are all handled)
// and schedules the restart.
func (r *shellRunner) ended() {
	err := r.proc.Err()
	tb := r.proc.LastTraceback()
	r.proc = nil
	r.backlog = r.backlog[:0]
	r.ctx.Counter("multilang.crashes").Inc()
	r.schedule()
	r.log.Error("the subprocess ended; it will be restarted", zap.Error(err), zap.Duration("restart_in", time.Until(r.restartAt).Round(time.Millisecond)))
	ended := fmt.Errorf("subprocess of %s/%d ended: %w", r.ctx.ComponentName(), r.ctx.TaskID(), err)
	if tb != nil {
		// Say why it ended, with the traceback as the stack.
		r.report(&StackError{Message: fmt.Sprintf("%v; its last traceback: %s", ended, tb.Message), Stack: tb.Text})
		return
	}
	r.report(ended)
}

// send queues a framed message for the subprocess. While the queue is
// full, the messages the subprocess writes are set aside (handled later,
// in order), so that a subprocess blocked writing cannot deadlock with
// the runtime. It returns false when the process ended.
func (r *shellRunner) send(b []byte) bool {
	p := r.proc
	select {
	case p.Out() <- b:
		return true
	default:
	}
	for {
		select {
		case p.Out() <- b:
			return true
		case m := <-p.In():
			r.backlog = append(r.backlog, m)
		case <-p.Done():
			return false
		}
	}
}

// next returns the next message of the subprocess: set aside ones first.
// With block it waits for one; it returns nil when none is ready (without
// block) or when the process ended and everything it sent was returned.
func (r *shellRunner) next(block bool) *multilang.Message {
	m := r.nextMessage(block)
	if m != nil && m.Command == multilang.CmdSync {
		r.syncs++
	}
	return m
}

func (r *shellRunner) nextMessage(block bool) *multilang.Message {
	if len(r.backlog) > 0 {
		m := r.backlog[0]
		r.backlog[0] = nil
		r.backlog = r.backlog[1:]
		return m
	}
	p := r.proc
	select {
	case m := <-p.In():
		return m
	default:
	}
	if !block {
		select {
		case <-p.Done():
		default:
			return nil
		}
	}
	select {
	case m := <-p.In():
		return m
	case <-p.Done():
	}
	// Done: In holds everything the process sent.
	select {
	case m := <-p.In():
		return m
	default:
		return nil
	}
}

// dead reports whether the process has ended.
func (r *shellRunner) dead() bool {
	select {
	case <-r.proc.Done():
		return len(r.backlog) == 0 && len(r.proc.In()) == 0
	default:
		return false
	}
}

// common handles the messages spouts and bolts share; a message of
// another command is a protocol error that kills the process.
func (r *shellRunner) common(m *multilang.Message) {
	switch m.Command {
	case multilang.CmdLog:
		r.log.Log(logLevel(m.Level), m.Msg, zap.String("source", "subprocess"))
	case multilang.CmdError:
		r.ctx.Counter("multilang.errors").Inc()
		r.report(subprocessError(r.ctx.ComponentName(), r.ctx.TaskID(), m.Msg))
	case multilang.CmdMetrics:
		n, ok := m.Params.(int64)
		if !ok {
			if f, isFloat := m.Params.(float64); isFloat && f == float64(int64(f)) {
				n, ok = int64(f), true
			}
		}
		if !ok {
			r.warnOnce("metrics params must be an integer (added to the counter user.multilang.<name>)", zap.String("name", m.Name), zap.Any("params", m.Params))
			return
		}
		r.ctx.Counter("multilang." + m.Name).Add(n)
	case multilang.CmdSync:
	default:
		r.proc.Kill(fmt.Errorf("%w: command %q is not valid for a %s", multilang.ErrProtocol, m.Command, r.kind()))
	}
}

func (r *shellRunner) kind() string {
	if r.spec.bolt {
		return "bolt"
	}
	return "spout"
}

func (r *shellRunner) warnOnce(msg string, fields ...zap.Field) {
	if r.warned++; r.warned == 1 {
		r.log.Warn(msg+" (logged once)", fields...)
	}
}

// close ends the subprocess.
func (r *shellRunner) close() {
	if r.proc != nil {
		r.proc.Close()
		r.proc = nil
	}
}

func logLevel(l int) zapcore.Level {
	switch l {
	case multilang.LevelTrace, multilang.LevelDebug:
		return zapcore.DebugLevel
	case multilang.LevelWarn:
		return zapcore.WarnLevel
	case multilang.LevelError:
		return zapcore.ErrorLevel
	}
	return zapcore.InfoLevel
}

// splitPath splits a topology.multilang.path value; relative entries are
// relative to dir.
func splitPath(value, dir string) []string {
	var out []string
	for _, e := range filepath.SplitList(value) {
		if e == "" {
			continue
		}
		if !filepath.IsAbs(e) {
			e = filepath.Join(dir, e)
		}
		out = append(out, e)
	}
	return out
}

// lookCommand resolves a shell component's command: an absolute path as
// is, a path with a slash relative to dir, a bare name in path and then in
// the PATH.
func lookCommand(command, dir string, path []string) (string, error) {
	if filepath.IsAbs(command) {
		return command, nil
	}
	if strings.ContainsRune(command, filepath.Separator) {
		return filepath.Join(dir, command), nil
	}
	for _, d := range append(path, filepath.SplitList(os.Getenv("PATH"))...) {
		if d == "" {
			continue
		}
		p := filepath.Join(d, command)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	if len(path) > 0 {
		return "", fmt.Errorf("command %q is in none of %s (%s) nor in the PATH", command, strings.Join(path, ":"), topology.KeyMultilangPath)
	}
	return "", fmt.Errorf("command %q is not in the PATH (set %s to the directory holding it, a virtualenv's bin for example)", command, topology.KeyMultilangPath)
}

// shellEnv is the instance's environment with path put first on PATH and
// the component's own variables added.
func shellEnv(path, extra []string) []string {
	env := os.Environ()
	if len(path) > 0 {
		p := strings.Join(path, string(filepath.ListSeparator))
		if old := os.Getenv("PATH"); old != "" {
			p += string(filepath.ListSeparator) + old
		}
		env = append(env, "PATH="+p)
	}
	return append(env, extra...)
}

// stormConf is the handshake's conf: the topology's settings with the
// component's over them, "true"/"false" as booleans and integers as
// numbers (as Storm's typed config), plus topology.name.
func stormConf(ctx Context) map[string]any {
	t := ctx.Topology()
	conf := map[string]any{}
	set := func(k, v string) {
		if b, err := strconv.ParseBool(v); err == nil && (v == "true" || v == "false") {
			conf[k] = b
		} else if n, err := strconv.ParseInt(v, 10, 64); err == nil {
			conf[k] = n
		} else {
			conf[k] = v
		}
	}
	for k, v := range t.Config {
		set(k, v)
	}
	if c, ok := t.Component(ctx.ComponentName()); ok {
		for k, v := range c.Config {
			set(k, v)
		}
	}
	conf["topology.name"] = t.Name
	return conf
}

// stormContext is the handshake's context, with the fields of Storm's
// TopologyContext that multilang libraries read.
func stormContext(ctx Context) map[string]any {
	t := ctx.Topology()
	taskComp := map[string]any{}
	for _, c := range t.Components {
		for _, id := range ctx.ComponentTasks(c.Name) {
			taskComp[strconv.Itoa(id)] = c.Name
		}
	}
	streams := []any{}
	outFields := map[string]any{}
	sources := map[string]any{}
	if c, ok := t.Component(ctx.ComponentName()); ok {
		for _, s := range c.Outputs {
			streams = append(streams, s.ID)
			outFields[s.ID] = stringsToAny(s.Fields)
		}
		for _, in := range c.Inputs {
			src, ok := t.Component(in.Component)
			if !ok {
				continue
			}
			for _, s := range src.Outputs {
				if s.ID != in.Stream {
					continue
				}
				m, _ := sources[in.Component].(map[string]any)
				if m == nil {
					m = map[string]any{}
					sources[in.Component] = m
				}
				m[s.ID] = stringsToAny(s.Fields)
			}
		}
	}
	return map[string]any{
		"taskid":                 int64(ctx.TaskID()),
		"componentid":            ctx.ComponentName(),
		"stormid":                ctx.TopologyID(),
		"task->component":        taskComp,
		"streams":                streams,
		"stream->outputfields":   outFields,
		"source->stream->fields": sources,
	}
}

func stringsToAny(s []string) []any {
	out := make([]any, len(s))
	for i, v := range s {
		out[i] = v
	}
	return out
}

// subprocessError is the error a subprocess reported with the error
// command. A message holding a traceback (pystorm sends the formatted
// exception) is reported with its last line as the message, as a
// traceback on stderr is, and the whole as the stack.
func subprocessError(component string, task int, msg string) error {
	if i := strings.Index(msg, "Traceback (most recent call last):"); i >= 0 {
		text := strings.TrimRight(msg[i:], "\n ")
		last := text[strings.LastIndexByte(text, '\n')+1:]
		return &StackError{Message: fmt.Sprintf("subprocess of %s: %s", component, strings.TrimSpace(last)), Stack: text}
	}
	return fmt.Errorf("subprocess of %s/%d: %s", component, task, msg)
}
