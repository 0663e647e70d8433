package instance

import (
	"fmt"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/egret-stream/egret/api"
	"github.com/egret-stream/egret/daemons/wire"
)

// Metrics are an instance's counters. They are written by the instance's
// goroutine and read concurrently by reporters.
type Metrics struct {
	Emitted      atomic.Int64 // tuples emitted (one per Emit call)
	Sent         atomic.Int64 // tuple copies sent to destination tasks
	Executed     atomic.Int64 // tuples given to Execute (bolts)
	ExecuteNanos atomic.Int64 // total time spent in Execute
	NextTuples   atomic.Int64 // NextTuple calls (spouts)
	Batches      atomic.Int64 // batches sent
	Errors       atomic.Int64 // errors reported or raised by the runtime
	Dropped      atomic.Int64 // tuples that could not be routed

	// At-least-once counters of a spout task.
	Acked                atomic.Int64 // roots whose tree completed (Ack called)
	Failed               atomic.Int64 // roots failed by a bolt or the ledger (Fail called)
	TimedOut             atomic.Int64 // roots that timed out (Fail called)
	CompleteLatencyNanos atomic.Int64 // sum of emit-to-ack times of acked roots
	CompleteLatencyCount atomic.Int64 // acked roots counted in CompleteLatencyNanos
	PendingRoots         atomic.Int64 // roots emitted and not yet acked, failed or timed out
	// Held counts the tuples a bolt holds outside Execute (api.Holder: a
	// shell bolt's subprocess has them), as of its last call.
	Held atomic.Int64
	// AckUpdates counts the ack and fail updates a bolt task sent.
	AckUpdates atomic.Int64
	// Reconfigurations counts Reconfigure calls (live user settings).
	Reconfigurations atomic.Int64
	// Relayouts counts task layout changes followed without a restart.
	Relayouts atomic.Int64

	// Effectively-once: states saved at barriers, saves that failed or
	// were aborted, the size of the last saved state and restores.
	Checkpoints        atomic.Int64
	CheckpointFailures atomic.Int64
	CheckpointBytes    atomic.Int64
	Restores           atomic.Int64
	// The asynchronous part of the last checkpoint (upload.go): its
	// duration, its full size and the bytes it uploaded (the rest it
	// shares with earlier checkpoints); the bytes uploaded since start.
	CheckpointAsyncNanos       atomic.Int64
	CheckpointFullBytes        atomic.Int64
	CheckpointIncrementalBytes atomic.Int64
	CheckpointUploadedBytes    atomic.Int64
	// CheckpointSyncNanos is the synchronous part of the last save (the
	// task stops processing for it): PreSave, the encoding of the
	// operator states and the fork of the keyed state.
	CheckpointSyncNanos atomic.Int64

	// ExecuteLatency is the distribution of Execute times (sampled: each
	// timed tuple counts for the tuples it stands for); CompleteLatency
	// that of the emit-to-ack times of acked roots.
	ExecuteLatency, CompleteLatency wire.LatencyHistogram

	mu         sync.Mutex
	counters   map[string]*api.Counter
	exceptions []Exception // pending, distinct by message and stack
}

// Exception is an error user code reported (ReportError) or a recovered
// panic, pending until the next metrics report carries it to the
// topology manager (the tracker shows it).
type Exception struct {
	Message, Stack string
	// UnixNanos is when it last happened; Count how often since the
	// last report.
	UnixNanos, Count int64
}

// Bounds of the pending exceptions.
const (
	maxPendingExceptions = 32
	maxExceptionMessage  = 1 << 10
	maxStackFrames       = 32
)

// AddException records an exception; equal ones (message and stack) are
// counted together, and beyond maxPendingExceptions distinct ones only
// the count of the last one grows.
func (m *Metrics) AddException(message, stack string, now time.Time) {
	if len(message) > maxExceptionMessage {
		message = message[:maxExceptionMessage]
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for i := range m.exceptions {
		if e := &m.exceptions[i]; e.Message == message && e.Stack == stack {
			e.Count++
			e.UnixNanos = now.UnixNano()
			return
		}
	}
	if len(m.exceptions) >= maxPendingExceptions {
		e := &m.exceptions[len(m.exceptions)-1]
		e.Count++
		e.UnixNanos = now.UnixNano()
		return
	}
	m.exceptions = append(m.exceptions, Exception{Message: message, Stack: stack, UnixNanos: now.UnixNano(), Count: 1})
}

// TakeExceptions returns the pending exceptions and forgets them.
func (m *Metrics) TakeExceptions() []Exception {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := m.exceptions
	m.exceptions = nil
	return out
}

// CallerStack formats the stack from its caller up (function and
// file:line per frame, no addresses or arguments, so that the same call
// site always gives the same text), leaving out the skip innermost
// frames.
func CallerStack(skip int) string {
	pcs := make([]uintptr, maxStackFrames)
	n := runtime.Callers(skip+2, pcs)
	frames := runtime.CallersFrames(pcs[:n])
	var b strings.Builder
	for {
		f, more := frames.Next()
		fmt.Fprintf(&b, "%s\n\t%s:%d\n", f.Function, f.File, f.Line)
		if !more {
			break
		}
	}
	return b.String()
}

// Counter returns the user counter named name, creating it.
func (m *Metrics) Counter(name string) *api.Counter {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.counters == nil {
		m.counters = map[string]*api.Counter{}
	}
	c, ok := m.counters[name]
	if !ok {
		c = &api.Counter{}
		m.counters[name] = c
	}
	return c
}

// UserCounters returns a snapshot of the user counters, by name.
func (m *Metrics) UserCounters() map[string]int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make(map[string]int64, len(m.counters))
	for k, c := range m.counters {
		out[k] = c.Value()
	}
	return out
}

// CounterNames returns the user counter names, sorted.
func (m *Metrics) CounterNames() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	names := make([]string, 0, len(m.counters))
	for k := range m.counters {
		names = append(names, k)
	}
	sort.Strings(names)
	return names
}
