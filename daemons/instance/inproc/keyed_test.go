package inproc

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/egret-stream/egret/api"
	"github.com/egret-stream/egret/core/keygroup"
	"github.com/egret-stream/egret/core/topology"
	"github.com/egret-stream/egret/core/tuple"
	_ "github.com/egret-stream/egret/statebackends/heap"
	_ "github.com/egret-stream/egret/statebackends/pebble"
)

// keySpout emits n tuples (key "k<i mod keys>", i) and then a marker
// tuple per key on the stream "end".
type keySpout struct {
	api.BaseSpout
	n, keys, next int
	out           api.SpoutCollector
}

func (s *keySpout) Open(_ api.Context, out api.SpoutCollector) error { s.out = out; return nil }

func (s *keySpout) NextTuple() {
	switch {
	case s.next < s.n:
		s.out.Emit(api.Values{fmt.Sprint("k", s.next%s.keys), s.next}, nil)
	case s.next < s.n+s.keys:
		s.out.EmitStream("end", api.Values{fmt.Sprint("k", s.next-s.n)}, nil)
	default:
		return
	}
	s.next++
}

func (s *keySpout) DeclareOutputFields(d api.OutputDeclarer) {
	d.Declare("key", "i")
	d.DeclareStream("end", "key")
}

// keyedRecord is what the counting bolt saw.
type keyedRecord struct {
	mu     sync.Mutex
	counts map[string]int64 // at the end marker
	timers map[string]int   // processing-time timers fired, by key
	tasks  map[string]int   // task index that counted the key
	errs   []string
}

func (r *keyedRecord) fail(format string, args ...any) {
	r.mu.Lock()
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
	r.mu.Unlock()
}

// keyedCounter counts per key in keyed value state (the key current from
// the fields grouping), registers one processing-time timer per key at its
// first tuple, and records its count at the key's end marker.
type keyedCounter struct {
	api.BaseBolt
	rec   *keyedRecord
	index int
	s     *api.States
	count *api.ValueState[int64]
}

func (b *keyedCounter) Prepare(ctx api.Context, _ api.BoltCollector) error {
	b.index = ctx.TaskIndex()
	return nil
}

func (b *keyedCounter) InitState(s *api.States) (err error) {
	b.s = s
	b.count, err = api.NewValueState[int64](s, "count")
	return err
}

func (b *keyedCounter) PreSave(int64) error { return nil }

func (b *keyedCounter) DeclareOutputFields(api.OutputDeclarer) {}

func (b *keyedCounter) Execute(t api.Tuple) {
	key, _ := b.s.CurrentKey()
	if len(key) != 1 || key[0] != t.Values()[0] {
		b.rec.fail("tuple %v: current key %v", t.Values(), key)
		return
	}
	n, _, err := b.count.Value()
	if err != nil {
		b.rec.fail("value: %v", err)
		return
	}
	if t.SourceStream() == "end" {
		b.rec.mu.Lock()
		b.rec.counts[key[0].(string)] = n
		b.rec.tasks[key[0].(string)] = b.index
		b.rec.mu.Unlock()
		return
	}
	if n == 0 {
		if err := b.s.RegisterProcessingTimeTimer(b.s.ProcessingTime() + 20); err != nil {
			b.rec.fail("timer: %v", err)
		}
	}
	if err := b.count.Update(n + 1); err != nil {
		b.rec.fail("update: %v", err)
	}
}

func (b *keyedCounter) OnTimer(tm api.Timer) {
	key, _ := b.s.CurrentKey()
	if tm.Domain != api.ProcessingTime || len(key) != 1 || key[0] != tm.Key[0] {
		b.rec.fail("timer %+v with current key %v", tm, key)
		return
	}
	if n, ok, err := b.count.Value(); !ok || err != nil || n == 0 {
		b.rec.fail("timer of %v: count %d %v %v", key, n, ok, err)
	}
	b.rec.mu.Lock()
	b.rec.timers[key[0].(string)]++
	b.rec.mu.Unlock()
}

// TestKeyedStateInProcess: in a topology that does not checkpoint, a bolt
// keeps keyed state on each backend: the runtime makes each tuple's
// grouping fields the current key, every key's count is exact and kept by
// the task that owns its key group, and processing-time timers fire once
// per key with the key current.
func TestKeyedStateInProcess(t *testing.T) {
	const n, keys, tasks = 6000, 300, 3
	for _, be := range []string{"heap", "pebble"} {
		t.Run(be, func(t *testing.T) {
			rec := &keyedRecord{counts: map[string]int64{}, timers: map[string]int{}, tasks: map[string]int{}}
			b := api.NewTopologyBuilder("keyed")
			b.SetConfig(topology.KeyStateBackend, be)
			b.SetSpout("src", func() api.Spout { return &keySpout{n: n, keys: keys} }, 1)
			b.SetBolt("count", func() api.Bolt { return &keyedCounter{rec: rec} }, tasks).
				FieldsGrouping("src", "key").Input("src", "end", api.Fields("key"))
			topo, err := b.Build()
			if err != nil {
				t.Fatal(err)
			}
			r, err := New(topo, Options{DrainTimeout: 10 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			done := make(chan error, 1)
			go func() { _, err := r.Run(ctx); done <- err }()
			deadline := time.Now().Add(20 * time.Second)
			for {
				rec.mu.Lock()
				complete := len(rec.counts) == keys && len(rec.timers) == keys
				rec.mu.Unlock()
				if complete || time.Now().After(deadline) {
					break
				}
				time.Sleep(10 * time.Millisecond)
			}
			cancel()
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			rec.mu.Lock()
			defer rec.mu.Unlock()
			if len(rec.errs) > 0 {
				t.Fatalf("%d errors, first: %s", len(rec.errs), rec.errs[0])
			}
			if len(rec.counts) != keys || len(rec.timers) != keys {
				t.Fatalf("%d of %d keys counted, %d timed", len(rec.counts), keys, len(rec.timers))
			}
			for k, c := range rec.counts {
				if c != n/keys {
					t.Fatalf("key %s counted %d, want %d", k, c, n/keys)
				}
				h, _ := tuple.HashValues(nil, k)
				if want := keygroup.TaskIndex(h, tasks, keygroup.DefaultMaxParallelism); rec.tasks[k] != want {
					t.Fatalf("key %s counted by task %d, its group's owner is %d", k, rec.tasks[k], want)
				}
				if rec.timers[k] != 1 {
					t.Fatalf("key %s: %d timers fired", k, rec.timers[k])
				}
			}
		})
	}
}
