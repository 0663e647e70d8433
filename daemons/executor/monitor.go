package executor

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"go.uber.org/zap"

	"github.com/egret-stream/egret/daemons/executor/internal/cgroup"
	"github.com/egret-stream/egret/daemons/wire"
	"github.com/egret-stream/egret/proto/egretpb"
)

// Metric names the executor publishes to the metrics manager (source
// "executor"). Those of an instance carry its component and task, so the
// topology manager shows them with the instance's own metrics.
const (
	MetricCPULimit        = "resource.cpu.limit.cores"
	MetricMemoryLimit     = "resource.memory.limit.bytes"
	MetricDiskLimit       = "resource.disk.limit.bytes"
	MetricGoMaxProcs      = "resource.gomaxprocs"
	MetricGoMemLimit      = "resource.gomemlimit.bytes"
	MetricInCgroup        = "resource.cgroup"
	MetricOOMKills        = "resource.memory.oom.kills"
	MetricMemoryBytes     = "resource.memory.bytes"
	MetricThrottledPeriod = "resource.cpu.throttled.periods"
	MetricThrottledSecs   = "resource.cpu.throttled.seconds"
	MetricDiskBytes       = "resource.disk.bytes"
	MetricDiskOver        = "resource.disk.over"
	// Container level: whether the children are in cgroups (0 or 1) and
	// the cgroup version (0 without).
	MetricCgroups       = "executor.cgroups"
	MetricCgroupVersion = "executor.cgroup.version"
)

// maxPendingExceptions bounds the exceptions waiting for the metrics
// manager; older ones are dropped.
const maxPendingExceptions = 100

// resourceState is what the monitor last read of a process; guarded by
// ex.mu except the atomics.
type resourceState struct {
	// watchdog: the RSS watchdog killed the current run; goOOM: the
	// current run printed the Go runtime's out of memory crash.
	watchdog atomic.Bool
	goOOM    atomic.Bool
	// cgroupOOM is the group's oom_kill count already accounted for.
	cgroupOOM uint64
	stats     cgroup.Stats
	memory    uint64
	disk      int64
	diskOver  bool
	// throttled: the throttling was reported (once per process).
	throttled bool
}

// throttleReport is the share of a monitor interval an instance must
// spend throttled for the executor to report it (once).
const throttleReport = 0.1

// oomSniffer passes a child's output to its log and notes the Go runtime's
// "fatal error: runtime: out of memory".
type oomSniffer struct {
	w   io.Writer
	hit *atomic.Bool
}

var goOOMMessage = []byte("runtime: out of memory")

func (s *oomSniffer) Write(b []byte) (int, error) {
	if bytes.Contains(b, goOOMMessage) {
		s.hit.Store(true)
	}
	return s.w.Write(b)
}

// oomCause says why the run that just ended was an out of memory death,
// or "" if it was not.
func (p *process) oomCause() string {
	if p.kind != KindInstance {
		return ""
	}
	cause := ""
	if p.group != nil {
		if st, err := p.group.Stats(); err == nil {
			p.ex.mu.Lock()
			if st.OOMKills > p.res.cgroupOOM {
				cause = "cgroup OOM kill"
			}
			p.res.cgroupOOM = st.OOMKills
			p.res.stats = st
			p.ex.mu.Unlock()
		}
	}
	if p.res.watchdog.Swap(false) && cause == "" {
		cause = "killed by the executor's RSS watchdog"
	}
	if p.res.goOOM.Swap(false) && cause == "" {
		cause = "Go runtime out of memory"
	}
	return cause
}

// reportOOM counts an out of memory death, logs it and queues the
// exception for the topology manager; it returns the exit reason.
func (p *process) reportOOM(pid int, cause, status string) string {
	e := p.ex
	msg := fmt.Sprintf("task %d (%s) exceeded its memory limit of %s, restarted", p.task, p.component, FormatBytes(p.limits.RAM))
	e.mu.Lock()
	p.oomKills++
	e.mu.Unlock()
	e.log.Warn(msg, zap.String("process", p.name), zap.Int("pid", pid), zap.String("cause", cause), zap.String("status", status))
	e.addException(p.component, p.task, msg+" ("+cause+")")
	return msg + " (" + cause + "; " + status + ")"
}

// exception is one report waiting for the metrics manager.
type exception struct {
	component string
	task      int
	message   string
	at        int64
}

// exceptions queues reports for the topology manager.
type exceptions struct {
	mu      sync.Mutex
	pending []exception
}

func (e *Executor) addException(component string, task int, msg string) {
	x := &e.exc
	x.mu.Lock()
	defer x.mu.Unlock()
	if len(x.pending) >= maxPendingExceptions {
		x.pending = x.pending[1:]
	}
	x.pending = append(x.pending, exception{component: component, task: task, message: msg, at: time.Now().UnixNano()})
}

// monitor reads the resource use of every child each interval, enforces
// the RSS watchdog without cgroups, reports disk use over its share, and
// publishes it all to the metrics manager, until ctx ends.
func (e *Executor) monitor(ctx context.Context) {
	t := time.NewTicker(e.set.monitorEvery)
	defer t.Stop()
	pub := &publisher{socket: e.paths.MetricsSocket, log: e.log}
	defer pub.close()
	for round := 0; ; round++ {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		// Walking the directories costs more than reading counters.
		e.sample(round%diskEvery == 0)
		ms, sent := e.messages()
		if !pub.send(ms) {
			// Not lost: the next round tries again.
			e.requeue(sent)
		}
	}
}

// diskEvery is how many monitor rounds pass between two measurements of
// the instances' working directories.
const diskEvery = 5

// sample reads what each running instance uses, its disk too when disk is
// set.
func (e *Executor) sample(disk bool) {
	e.mu.Lock()
	ps := make([]*process, 0, len(e.procs))
	pids := make([]int, 0, len(e.procs))
	for _, p := range e.procs {
		if p.kind == KindInstance {
			ps = append(ps, p)
			pids = append(pids, p.pid)
		}
	}
	e.mu.Unlock()
	for i, p := range ps {
		pid := pids[i]
		var st cgroup.Stats
		var mem uint64
		if p.group != nil {
			st, _ = p.group.Stats()
			mem = st.MemoryBytes
		} else if pid > 0 {
			mem = rssOf(pid)
			if p.limits.RAM > 0 && mem > uint64(p.limits.RAM) && !p.res.watchdog.Load() {
				p.res.watchdog.Store(true)
				e.log.Warn("instance exceeds its memory limit; killing it (no cgroup: RSS watchdog)",
					zap.String("process", p.name), zap.Int("pid", pid),
					zap.String("rss", FormatBytes(int64(mem))), zap.String("limit", FormatBytes(p.limits.RAM)))
				signalGroup(pid, syscall.SIGKILL)
			}
		}
		e.mu.Lock()
		used := p.res.disk
		e.mu.Unlock()
		if disk {
			used = dirUsage(p.dir)
		}
		over := p.limits.Disk > 0 && used > p.limits.Disk
		e.mu.Lock()
		throttledNow := false
		if p.group != nil {
			// The OOM count is taken at exit (oomCause); keep only
			// the rest here.
			st.OOMKills = p.res.stats.OOMKills
			delta := float64(st.ThrottledUsec) - float64(p.res.stats.ThrottledUsec)
			if p.res.stats.ThrottledUsec > 0 && delta > throttleReport*float64(e.set.monitorEvery.Microseconds()) && !p.res.throttled {
				p.res.throttled, throttledNow = true, true
			}
			p.res.stats = st
		}
		p.res.memory = mem
		p.res.disk = used
		was := p.res.diskOver
		p.res.diskOver = over
		e.mu.Unlock()
		if throttledNow {
			msg := fmt.Sprintf("task %d (%s) is throttled at its cpu limit of %s cores: it wants more cpu than the packing plan gives it",
				p.task, p.component, strconv.FormatFloat(p.limits.CPU, 'f', -1, 64))
			e.log.Info(msg, zap.String("process", p.name), zap.Int("gomaxprocs", p.limits.GOMAXPROCS))
			e.addException(p.component, p.task, msg)
		}
		if over && !was {
			msg := fmt.Sprintf("task %d (%s) uses %s of disk in its working directory, over its share of %s (not stopped)",
				p.task, p.component, FormatBytes(used), FormatBytes(p.limits.Disk))
			e.log.Warn(msg, zap.String("process", p.name), zap.String("dir", p.dir))
			e.addException(p.component, p.task, msg)
		}
	}
}

// messages builds this round's reports: the container's, then one per
// instance, with the pending exceptions (returned too, and no longer
// pending).
func (e *Executor) messages() ([]*egretpb.MetricsPublish, []exception) {
	now := time.Now().UnixNano()
	c := int32(e.cfg.Container)
	cont := &egretpb.MetricsPublish{Source: "executor", Container: c, UnixNanos: now}
	add := func(m *egretpb.MetricsPublish, name string, v float64) {
		m.Metrics = append(m.Metrics, &egretpb.Metric{Name: name, Value: v})
	}
	ver := 0.0
	if e.cg != nil {
		add(cont, MetricCgroups, 1)
		ver = 1
		if e.cg.Version() == cgroup.V2 {
			ver = 2
		}
	} else {
		add(cont, MetricCgroups, 0)
	}
	add(cont, MetricCgroupVersion, ver)
	cont.Metrics = append(cont.Metrics, wire.ProcessMetrics()...)
	out := []*egretpb.MetricsPublish{cont}
	byTask := map[int]*egretpb.MetricsPublish{}
	e.mu.Lock()
	for _, p := range e.procs {
		if p.kind != KindInstance {
			continue
		}
		m := &egretpb.MetricsPublish{Source: "executor", Container: c, Component: p.component, TaskId: int32(p.task), UnixNanos: now}
		l := p.limits
		add(m, MetricCPULimit, l.CPU)
		add(m, MetricMemoryLimit, float64(l.RAM))
		add(m, MetricDiskLimit, float64(l.Disk))
		add(m, MetricGoMaxProcs, float64(l.GOMAXPROCS))
		add(m, MetricGoMemLimit, float64(l.GOMEMLIMIT))
		in := 0.0
		if p.group != nil {
			in = 1
		}
		add(m, MetricInCgroup, in)
		add(m, MetricOOMKills, float64(p.oomKills))
		add(m, MetricMemoryBytes, float64(p.res.memory))
		add(m, MetricThrottledPeriod, float64(p.res.stats.NrThrottled))
		add(m, MetricThrottledSecs, float64(p.res.stats.ThrottledUsec)/1e6)
		add(m, MetricDiskBytes, float64(p.res.disk))
		over := 0.0
		if p.res.diskOver {
			over = 1
		}
		add(m, MetricDiskOver, over)
		out = append(out, m)
		byTask[p.task] = m
	}
	e.mu.Unlock()
	e.exc.mu.Lock()
	for _, x := range e.exc.pending {
		m := cont
		if x.task > 0 {
			if m = byTask[x.task]; m == nil {
				// The instance is gone: report on its own.
				m = &egretpb.MetricsPublish{Source: "executor", Container: c, Component: x.component, TaskId: int32(x.task), UnixNanos: now}
				byTask[x.task] = m
				out = append(out, m)
			}
		}
		m.Exceptions = append(m.Exceptions, &egretpb.ExceptionReport{Message: x.message, UnixNanos: x.at, Count: 1})
	}
	sent := e.exc.pending
	e.exc.pending = nil
	e.exc.mu.Unlock()
	return out, sent
}

// requeue puts back exceptions that could not be sent, before newer ones,
// within the bound.
func (e *Executor) requeue(xs []exception) {
	if len(xs) == 0 {
		return
	}
	x := &e.exc
	x.mu.Lock()
	defer x.mu.Unlock()
	all := append(xs, x.pending...)
	if len(all) > maxPendingExceptions {
		all = all[len(all)-maxPendingExceptions:]
	}
	x.pending = all
}

// publisher writes reports to the metrics manager's socket, dialling again
// after a failure.
type publisher struct {
	socket string
	log    *zap.Logger
	conn   net.Conn
	buf    []byte
	down   bool
}

// send writes ms and reports whether it did. A written report may still
// be lost if the metrics manager dies before reading it.
func (p *publisher) send(ms []*egretpb.MetricsPublish) bool {
	if p.conn == nil {
		c, err := net.DialTimeout("unix", p.socket, time.Second)
		if err != nil {
			if !p.down {
				p.log.Debug("metrics manager not reachable; resource metrics wait until it is", zap.String("socket", p.socket), zap.Error(err))
				p.down = true
			}
			return false
		}
		p.conn, p.down = c, false
	}
	p.buf = p.buf[:0]
	for _, m := range ms {
		var err error
		if p.buf, err = wire.AppendMessage(p.buf, m); err != nil {
			p.log.Error("encode resource metrics", zap.Error(err))
			return true // would fail again: dropped
		}
	}
	_ = p.conn.SetWriteDeadline(time.Now().Add(5 * time.Second))
	if _, err := p.conn.Write(p.buf); err != nil {
		p.log.Debug("metrics manager connection lost", zap.Error(err))
		p.close()
		p.down = true
		return false
	}
	return true
}

func (p *publisher) close() {
	if p.conn != nil {
		_ = p.conn.Close()
		p.conn = nil
	}
}

// rssOf returns the resident memory of pid (0 if unknown).
func rssOf(pid int) uint64 {
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/statm")
	if err != nil {
		return 0
	}
	defer f.Close()
	line, _ := bufio.NewReader(f).ReadString('\n')
	fields := strings.Fields(line)
	if len(fields) < 2 {
		return 0
	}
	pages, err := strconv.ParseUint(fields[1], 10, 64)
	if err != nil {
		return 0
	}
	return pages * uint64(os.Getpagesize())
}

// dirUsage is the disk space the files under dir take (allocated blocks,
// so sparse files count what they use).
func dirUsage(dir string) int64 {
	if dir == "" {
		return 0
	}
	var n int64
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil // vanished or unreadable: not counted
		}
		if info, err := d.Info(); err == nil {
			if st, ok := info.Sys().(*syscall.Stat_t); ok {
				n += st.Blocks * 512
			} else {
				n += info.Size()
			}
		}
		return nil
	})
	return n
}
