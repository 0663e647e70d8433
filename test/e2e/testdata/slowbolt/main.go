// Command slowbolt is the back pressure topology (issue 6, T4): an
// unthrottled spout "source" feeds, by shuffle grouping, a bolt "slow"
// whose processing rate is limited at run time, without a restart.
//
//	egret submit local ./test/e2e/testdata/slowbolt -- --state /tmp/bp --rate 1000
//
// The bolt polls the file <state>/slow-rate every 200ms: its content is
// the most tuples per second each bolt task executes (0 or an empty file:
// unlimited). A missing file means the --rate given at submission.
//
// Both components write a report every 200ms, replacing it atomically:
// <state>/source-<task>.json {"emitted", "acked", "acked_distinct",
// "failed", "at"} and <state>/slow-<task>.json {"executed",
// "distinct", "rate", "at", "pid"} ("at" is Unix nanoseconds, "pid" the
// bolt process's id: a restarted process's counters start from zero). The runtime's own
// counters (instance.emitted, instance.executed) are in the topology
// manager's /stats too.
//
// Its own flags (given before Egret's, or after -- with egret submit):
//
//	--state DIR       directory of the rate file and the reports (required)
//	--rate N          initial per-task rate of the slow bolt (default 0: unlimited)
//	--containers N    containers (default 2: the spout in 1, the bolt in 2)
//	--payload N       bytes of padding per tuple besides its int64 id (default 0)
//	--acking          at-least-once: ids are message ids, failed ids are re-emitted
//	--ids N           emit ids 0..N-1 then stop (0: unbounded)
//	--pending N       max spout pending in at-least-once mode (default 1000)
//	--emit-rate N     most tuples per second the spout emits (default 0: unlimited)
//	--topology-config K=V  a topology setting, e.g. topology.healthmgr.enabled=true (repeatable)
//
// With --ids, the spout counts distinct acked ids and the bolt distinct
// received ids: a run without loss ends with both equal to N.
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/egret-stream/egret/api"
	"github.com/egret-stream/egret/api/runner"
	"github.com/egret-stream/egret/core/topology"
)

// Topology config keys.
const (
	keyState   = "slowbolt.state.dir"
	keyRate    = "slowbolt.rate"
	keyPayload = "slowbolt.payload.bytes"
	keyIDs     = "slowbolt.ids"
	keyEmit    = "slowbolt.emit.rate"
)

// RateFile is the name of the rate file in the state directory.
const RateFile = "slow-rate"

// reportEvery is how often reports are written and the rate file read.
const reportEvery = 200 * time.Millisecond

type options struct {
	state      string
	rate       int
	containers int
	payload    int
	acking     bool
	ids        int
	pending    int
	emitRate   int
	settings   settingsFlag
}

// settingsFlag collects --topology-config K=V.
type settingsFlag map[string]string

func (f settingsFlag) String() string { return fmt.Sprint(map[string]string(f)) }

func (f settingsFlag) Set(v string) error {
	k, val, ok := strings.Cut(v, "=")
	if !ok || k == "" {
		return fmt.Errorf("%q is not KEY=VALUE", v)
	}
	f[k] = val
	return nil
}

func main() {
	o := options{settings: settingsFlag{}}
	fs := flag.NewFlagSet("slowbolt", flag.ContinueOnError)
	fs.StringVar(&o.state, "state", "", "directory of the rate file and the reports (required)")
	fs.IntVar(&o.rate, "rate", 0, "initial tuples per second per slow bolt task (0: unlimited)")
	fs.IntVar(&o.containers, "containers", 2, "containers in a cluster")
	fs.IntVar(&o.payload, "payload", 0, "bytes of padding per tuple")
	fs.BoolVar(&o.acking, "acking", false, "at-least-once delivery with replay of failed ids")
	fs.IntVar(&o.ids, "ids", 0, "emit ids 0..N-1, then stop (0: unbounded)")
	fs.IntVar(&o.pending, "pending", 1000, "max spout pending (at-least-once)")
	fs.IntVar(&o.emitRate, "emit-rate", 0, "most tuples per second the spout emits (0: unlimited)")
	fs.Var(o.settings, "topology-config", "a topology setting KEY=VALUE (repeatable)")
	own, rest := runner.SplitArgs(os.Args[1:], fs)
	if err := fs.Parse(own); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(runner.ExitUsage)
	}
	b, err := builder(o)
	if err != nil {
		fmt.Fprintf(os.Stderr, "slowbolt: %v\n", err)
		os.Exit(runner.ExitUsage)
	}
	os.Exit(runner.MainArgs(b, rest, os.Stdout, os.Stderr))
}

func builder(o options) (*api.TopologyBuilder, error) {
	if o.rate < 0 || o.payload < 0 || o.ids < 0 || o.emitRate < 0 || o.pending < 1 || o.containers < 1 {
		return nil, errors.New("--rate, --payload, --ids and --emit-rate cannot be negative; --pending and --containers must be positive")
	}
	b := api.NewTopologyBuilder("slowbolt")
	b.SetContainers(o.containers)
	// An instance process gets no flags: its config (and the state
	// directory) comes from the physical plan, so a missing --state is
	// reported by the components, not here.
	if o.state != "" {
		state, err := filepath.Abs(o.state)
		if err != nil {
			return nil, fmt.Errorf("--state: %w", err)
		}
		b.SetConfig(keyState, state)
	}
	b.SetConfig(keyRate, strconv.Itoa(o.rate))
	b.SetConfig(keyPayload, strconv.Itoa(o.payload))
	b.SetConfig(keyIDs, strconv.Itoa(o.ids))
	b.SetConfig(keyEmit, strconv.Itoa(o.emitRate))
	for k, v := range o.settings {
		b.SetConfig(k, v)
	}
	if o.acking {
		b.SetDeliveryMode(topology.AtLeastOnce)
		b.SetMaxSpoutPending(o.pending)
	}
	// Declared first, the spout is dealt to container 1 and the bolt to
	// container 2 by round-robin packing.
	b.SetSpout("source", func() api.Spout { return &source{} }, 1)
	b.SetBolt("slow", func() api.Bolt { return &slow{} }, 1).ShuffleGrouping("source")
	return b, nil
}

func configInt(ctx api.Context, key string) (int, error) {
	v := ctx.Config(key)
	if v == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("config %s: %q is not a non-negative number", key, v)
	}
	return n, nil
}

// writeJSON replaces path with v's JSON; errors are ignored (reports are
// for tests and benchmarks, and the next tick retries).
func writeJSON(path string, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		return
	}
	tmp := path + ".tmp"
	if os.WriteFile(tmp, b, 0o644) == nil {
		_ = os.Rename(tmp, path)
	}
}

// every calls fn every reportEvery until stop is closed.
func every(stop <-chan struct{}, fn func()) {
	t := time.NewTicker(reportEvery)
	defer t.Stop()
	for {
		select {
		case <-stop:
			fn()
			return
		case <-t.C:
			fn()
		}
	}
}

// source emits {id, padding} as fast as the runtime takes it.
type source struct {
	api.BaseSpout
	out      api.SpoutCollector
	pad      []byte
	ids      int64 // 0: unbounded
	next     int64
	replay   []int64
	acked    []bool
	reliable bool
	// emitRate paces the spout (0: unlimited): the n-th tuple is emitted
	// no earlier than epoch + n/emitRate.
	emitRate int64
	epoch    time.Time
	n        int64

	emitted, ackedN, ackedDistinct, failed atomic.Int64
	stop                                   chan struct{}
}

// SourceReport is the spout's report file.
type SourceReport struct {
	Emitted       int64 `json:"emitted"`
	Acked         int64 `json:"acked"`
	AckedDistinct int64 `json:"acked_distinct"`
	Failed        int64 `json:"failed"`
	At            int64 `json:"at"`
}

func (s *source) Open(ctx api.Context, out api.SpoutCollector) error {
	s.out = out
	pad, err := configInt(ctx, keyPayload)
	if err != nil {
		return err
	}
	ids, err := configInt(ctx, keyIDs)
	if err != nil {
		return err
	}
	emit, err := configInt(ctx, keyEmit)
	if err != nil {
		return err
	}
	s.pad, s.ids, s.emitRate = make([]byte, pad), int64(ids), int64(emit)
	if ids > 0 {
		s.acked = make([]bool, ids)
	}
	s.reliable = ctx.Config(topology.KeyDeliveryMode) == string(topology.AtLeastOnce)
	dir := ctx.Config(keyState)
	if dir == "" {
		return fmt.Errorf("config %s is required: submit with --state DIR", keyState)
	}
	path := filepath.Join(dir, fmt.Sprintf("source-%d.json", ctx.TaskID()))
	s.stop = make(chan struct{})
	go every(s.stop, func() {
		writeJSON(path, SourceReport{Emitted: s.emitted.Load(), Acked: s.ackedN.Load(), AckedDistinct: s.ackedDistinct.Load(), Failed: s.failed.Load(), At: time.Now().UnixNano()})
	})
	return nil
}

func (s *source) NextTuple() {
	if s.emitRate > 0 {
		now := time.Now()
		due := s.epoch.Add(time.Duration(float64(s.n) / float64(s.emitRate) * float64(time.Second)))
		if now.Sub(due) > time.Second {
			// Idle or throttled for long: start over, never burst.
			s.epoch, s.n, due = now, 0, now
		}
		if d := due.Sub(now); d > 0 {
			time.Sleep(min(d, 10*time.Millisecond))
			if time.Now().Before(due) {
				return
			}
		}
		s.n++
	}
	var id int64
	switch {
	case len(s.replay) > 0:
		id = s.replay[len(s.replay)-1]
		s.replay = s.replay[:len(s.replay)-1]
	case s.ids > 0 && s.next >= s.ids:
		return // every id emitted: the runtime backs off
	default:
		id = s.next
		s.next++
	}
	var msgID any
	if s.reliable {
		msgID = id
	}
	s.out.Emit(api.Values{id, s.pad}, msgID)
	s.emitted.Add(1)
}

func (s *source) Ack(msgID any) {
	s.ackedN.Add(1)
	if id, ok := msgID.(int64); ok && id >= 0 && id < int64(len(s.acked)) && !s.acked[id] {
		s.acked[id] = true
		s.ackedDistinct.Add(1)
	}
}

func (s *source) Fail(msgID any) {
	s.failed.Add(1)
	if id, ok := msgID.(int64); ok {
		s.replay = append(s.replay, id)
	}
}

func (s *source) Close() { close(s.stop) }

func (s *source) DeclareOutputFields(d api.OutputDeclarer) { d.Declare("id", "pad") }

// slow executes at most rate tuples per second (read from the rate file).
type slow struct {
	api.BaseBolt
	out  api.BoltCollector
	rate atomic.Int64
	// pacing: n tuples executed since epoch at the current rate.
	cur   int64
	epoch time.Time
	n     int64
	seen  []bool

	executed, distinct atomic.Int64
	stop               chan struct{}
}

// SlowReport is the bolt's report file.
type SlowReport struct {
	Executed int64 `json:"executed"`
	Distinct int64 `json:"distinct"`
	Rate     int64 `json:"rate"`
	At       int64 `json:"at"`
	Pid      int   `json:"pid"`
}

func (b *slow) Prepare(ctx api.Context, out api.BoltCollector) error {
	b.out = out
	rate, err := configInt(ctx, keyRate)
	if err != nil {
		return err
	}
	ids, err := configInt(ctx, keyIDs)
	if err != nil {
		return err
	}
	if ids > 0 {
		b.seen = make([]bool, ids)
	}
	dir := ctx.Config(keyState)
	if dir == "" {
		return fmt.Errorf("config %s is required: submit with --state DIR", keyState)
	}
	b.rate.Store(int64(rate))
	rateFile := filepath.Join(dir, RateFile)
	report := filepath.Join(dir, fmt.Sprintf("slow-%d.json", ctx.TaskID()))
	readRate := func() {
		if v, err := os.ReadFile(rateFile); err == nil {
			s := strings.TrimSpace(string(v))
			if s == "" {
				s = "0"
			}
			if n, err := strconv.ParseInt(s, 10, 64); err == nil && n >= 0 {
				b.rate.Store(n)
			}
		}
	}
	readRate()
	b.stop = make(chan struct{})
	go every(b.stop, func() {
		readRate()
		writeJSON(report, SlowReport{Executed: b.executed.Load(), Distinct: b.distinct.Load(), Rate: b.rate.Load(), At: time.Now().UnixNano(), Pid: os.Getpid()})
	})
	return nil
}

func (b *slow) Execute(t api.Tuple) {
	b.pace()
	if id := t.Int64(0); id >= 0 && id < int64(len(b.seen)) && !b.seen[id] {
		b.seen[id] = true
		b.distinct.Add(1)
	}
	b.executed.Add(1)
	b.out.Ack(t)
}

// pace sleeps so that tuples are executed at the current rate: the n-th
// tuple since the rate was set runs no earlier than epoch + n/rate. A
// bolt that fell more than a second behind (it was idle) starts over, so
// it never bursts to catch up.
func (b *slow) pace() {
	r := b.rate.Load()
	if r <= 0 {
		b.cur = 0
		return
	}
	now := time.Now()
	due := b.epoch.Add(time.Duration(float64(b.n) / float64(r) * float64(time.Second)))
	if r != b.cur || now.Sub(due) > time.Second {
		b.cur, b.epoch, b.n = r, now, 0
		due = now
	}
	b.n++
	if d := due.Sub(now); d > 0 {
		time.Sleep(d)
	}
}

func (b *slow) Cleanup() { close(b.stop) }

func (b *slow) DeclareOutputFields(api.OutputDeclarer) {}
