package instance

import (
	"sort"
	"sync"
	"sync/atomic"

	"github.com/egret-stream/egret/api"
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
	// AckUpdates counts the ack and fail updates a bolt task sent.
	AckUpdates atomic.Int64

	mu       sync.Mutex
	counters map[string]*api.Counter
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
