package kafka

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"

	"github.com/egret-stream/egret/api"
	"github.com/egret-stream/egret/core/topology"
	"github.com/egret-stream/egret/internal/kafkatest"
)

// deadline is how long a test waits for any condition.
const deadline = 90 * time.Second

// testCtx is the api.Context of one task of component comp.
type testCtx struct {
	topo     *topology.Topology
	comp     string
	index    int
	tasks    int
	log      *zap.Logger
	mu       sync.Mutex
	counters map[string]*api.Counter
	config   map[string]string
}

func newCtx(t *testing.T, mode topology.DeliveryMode, comp string, index, tasks int) *testCtx {
	return &testCtx{
		topo:     &topology.Topology{Name: "kt", Config: map[string]string{topology.KeyDeliveryMode: string(mode)}},
		comp:     comp,
		index:    index,
		tasks:    tasks,
		log:      zaptest.NewLogger(t, zaptest.Level(zap.WarnLevel)).With(zap.String("task", fmt.Sprintf("%s/%d", comp, index))),
		counters: map[string]*api.Counter{},
		config:   map[string]string{},
	}
}

func (c *testCtx) TopologyName() string  { return "kt" }
func (c *testCtx) TopologyID() string    { return "kt-1" }
func (c *testCtx) ComponentName() string { return c.comp }
func (c *testCtx) TaskID() int           { return 10 + c.index }
func (c *testCtx) TaskIndex() int        { return c.index }
func (c *testCtx) ComponentTasks(string) []int {
	ids := make([]int, c.tasks)
	for i := range ids {
		ids[i] = 10 + i
	}
	return ids
}
func (c *testCtx) Config(k string) string       { return c.config[k] }
func (c *testCtx) Logger() *zap.Logger          { return c.log }
func (c *testCtx) Topology() *topology.Topology { return c.topo }
func (c *testCtx) ResourcesDir() string         { return "" }
func (c *testCtx) Counter(name string) *api.Counter {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.counters[name] == nil {
		c.counters[name] = &api.Counter{}
	}
	return c.counters[name]
}

// emission is one tuple a spout emitted.
type emission struct {
	values api.Values
	id     any
}

func (e emission) partition() int32 { return e.values[3].(int32) }
func (e emission) offset() int64    { return e.values[4].(int64) }
func (e emission) value() string    { return string(e.values[1].([]byte)) }

// spoutOut records a spout's emits.
type spoutOut struct {
	mu  sync.Mutex
	out []emission
}

func (c *spoutOut) Emit(v api.Values, id any) { c.EmitStream("default", v, id) }
func (c *spoutOut) EmitStream(_ string, v api.Values, id any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.out = append(c.out, emission{v, id})
}
func (c *spoutOut) EmitDirect(_ int, s string, v api.Values, id any) { c.EmitStream(s, v, id) }
func (c *spoutOut) ReportError(error)                                {}

func (c *spoutOut) emitted() []emission {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]emission(nil), c.out...)
}

func (c *spoutOut) reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.out = nil
}

// boltOut records a bolt's acks and fails.
type boltOut struct {
	mu            sync.Mutex
	acked, failed []api.Tuple
	errs          []error
}

func (c *boltOut) Emit(api.Values, ...api.Tuple)                    {}
func (c *boltOut) EmitStream(string, api.Values, ...api.Tuple)      {}
func (c *boltOut) EmitDirect(int, string, api.Values, ...api.Tuple) {}
func (c *boltOut) Ack(t api.Tuple) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.acked = append(c.acked, t)
}
func (c *boltOut) Fail(t api.Tuple) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.failed = append(c.failed, t)
}
func (c *boltOut) ReportError(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.errs = append(c.errs, err)
}
func (c *boltOut) counts() (acked, failed int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.acked), len(c.failed)
}

// until calls step until cond holds, failing the test after deadline.
func until(t *testing.T, what string, step func(), cond func() bool) {
	t.Helper()
	end := time.Now().Add(deadline)
	for !cond() {
		if time.Now().After(end) {
			t.Fatalf("timed out waiting for %s", what)
		}
		if step != nil {
			step()
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// produce writes values to partition p of topic.
func produce(t *testing.T, b *kafkatest.Broker, topic string, p int32, values ...string) {
	t.Helper()
	cl := b.Client(t, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	var recs []*kgo.Record
	for _, v := range values {
		recs = append(recs, &kgo.Record{Topic: topic, Partition: p, Value: []byte(v)})
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("produce to %s/%d: %v", topic, p, err)
	}
	cl.Close()
}

func vals(prefix string, from, to int) []string {
	var out []string
	for i := from; i < to; i++ {
		out = append(out, fmt.Sprintf("%s%d", prefix, i))
	}
	return out
}

// committed returns the group's committed offset of topic/p (-1: none).
func committed(t *testing.T, adm *kadm.Client, group, topic string, p int32) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	os, err := adm.FetchOffsets(ctx, group)
	if err != nil {
		return -1
	}
	if o, ok := os.Lookup(topic, p); ok && o.Err == nil {
		return o.At
	}
	return -1
}

// readCommitted returns every record of topic a read_committed consumer
// sees now: the records below each partition's last stable offset (an
// open transaction holds it back). It reads control records too, so it
// knows when it has reached the last stable offset.
func readCommitted(t *testing.T, b *kafkatest.Broker, topic string, partitions int32) []*kgo.Record {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	adm := kadm.NewClient(b.Client(t))
	lso, err := adm.ListCommittedOffsets(ctx, topic)
	if err != nil {
		t.Fatalf("last stable offsets of %s: %v", topic, err)
	}
	if lso.Error() != nil {
		t.Fatalf("last stable offsets of %s: %v", topic, lso.Error())
	}
	stop := map[int32]int64{}
	for p := int32(0); p < partitions; p++ {
		o, ok := lso.Lookup(topic, p)
		if !ok {
			t.Fatalf("no last stable offset for %s/%d", topic, p)
		}
		if o.Offset > 0 {
			stop[p] = o.Offset
		}
	}
	cl := b.Client(t, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.KeepControlRecords())
	defer cl.Close()
	var out []*kgo.Record
	for len(stop) > 0 {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read %s: timed out (%d records, partitions left %v)", topic, len(out), stop)
		}
		fs.EachRecord(func(r *kgo.Record) {
			end, ok := stop[r.Partition]
			if !ok || r.Offset >= end {
				return
			}
			if !r.Attrs.IsControl() {
				out = append(out, r)
			}
			if r.Offset == end-1 {
				delete(stop, r.Partition)
			}
		})
	}
	return out
}

// values returns the records' values.
func recValues(rs []*kgo.Record) []string {
	var out []string
	for _, r := range rs {
		out = append(out, string(r.Value))
	}
	return out
}
