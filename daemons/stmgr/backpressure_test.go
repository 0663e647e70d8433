package stmgr_test

import (
	"bufio"
	"net"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/egret-stream/egret/api"
	"github.com/egret-stream/egret/core/topology"
	"github.com/egret-stream/egret/daemons/instance/gateway"
	"github.com/egret-stream/egret/daemons/stmgr"
	"github.com/egret-stream/egret/daemons/stmgr/stmgrtest"
	"github.com/egret-stream/egret/daemons/wire"
	"github.com/egret-stream/egret/proto/egretpb"
)

// Watermarks of the back pressure tests: small, so that a slow bolt
// passes them within milliseconds.
const (
	testHigh  = 64 << 10
	testBatch = 8 << 10
	// margin is what a queue toward a connected destination may hold above
	// the high watermark: one batch.
	margin = testBatch
)

// spoutHere, sinkThere: the spout (task 1) in container 1, the sink (task
// 2) in container 2, so every tuple crosses both stream managers.
func spoutHere(task int) int {
	if task == 1 {
		return 1
	}
	return 2
}

// smallQueue keeps a bolt instance's own queues small, so that a slow
// bolt's tuples pile up in its stream manager.
func smallQueue(cfg *gateway.Config) { cfg.Settings[gateway.KeyQueueMaxBytes] = "16KiB" }

func bpCluster(t *testing.T, containerOf func(int) int) *stmgrtest.Cluster {
	return bpClusterWith(t, containerOf, nil)
}

// slowPath starts the spout (task 1) in container 1 and the sink (task 2,
// with a small instance queue) in container 2, both connected; it returns
// the stream managers and the sink's instance. startSlowFlow then makes
// the sink slow and the spout emit without limit.
func slowPath(t *testing.T, inMemory bool, config func(*api.TopologyBuilder)) (c *stmgrtest.Cluster, s1, s2 *stmgr.StMgr, sink *stmgrtest.Instance) {
	c = bpClusterWith(t, spoutHere, config)
	c.InMemory = inMemory
	s1, s2 = c.StartStMgr(1), c.StartStMgr(2)
	c.StartInstance(1, 1)
	sink = c.StartInstance(2, 2, smallQueue)
	c.WaitConnected(map[int]int{1: 1, 2: 1})
	return c, s1, s2, sink
}

func startSlowFlow(c *stmgrtest.Cluster) {
	c.Count.Sink.SetDelay(50 * time.Microsecond)
	c.Count.Limit.Set(1 << 40)
}

func bpClusterWith(t *testing.T, containerOf func(int) int, config func(*api.TopologyBuilder)) *stmgrtest.Cluster {
	c := stmgrtest.NewClusterWith(t, 1, containerOf, config)
	c.Settings[stmgr.KeyHighWatermark] = "64KiB"
	c.Settings[stmgr.KeyLowWatermark] = "32KiB"
	c.Settings[stmgr.KeyBatchMaxBytes] = "8KiB"
	c.Settings[stmgr.KeySocketBufferBytes] = "64KiB"
	return c
}

// sampler records the largest queue toward any single destination of the
// given stream managers, every millisecond, until stopped.
type sampler struct {
	max  atomic.Int64
	stop chan struct{}
	wg   sync.WaitGroup
}

func sampleQueues(t *testing.T, ss ...*stmgr.StMgr) *sampler {
	sp := &sampler{stop: make(chan struct{})}
	sp.wg.Add(1)
	go func() {
		defer sp.wg.Done()
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			for _, s := range ss {
				c := s.Counters()
				for _, d := range c.Instances {
					if d.QueueBytes > sp.max.Load() {
						sp.max.Store(d.QueueBytes)
					}
				}
				for _, d := range c.Peers {
					if d.QueueBytes > sp.max.Load() {
						sp.max.Store(d.QueueBytes)
					}
				}
			}
			select {
			case <-sp.stop:
				return
			case <-tick.C:
			}
		}
	}()
	t.Cleanup(sp.done)
	return sp
}

func (sp *sampler) done() {
	select {
	case <-sp.stop:
	default:
		close(sp.stop)
	}
	sp.wg.Wait()
}

// TestBackPressureThrottlesTheSpoutToTheSlowBolt: an unthrottled spout in
// container 1 feeds a slow bolt in container 2. The bolt's stream manager
// engages back pressure, announces it, and the spout's stream manager
// stops reading the spout: the queues stay bounded by the high watermark
// and the spout emits only what the bolt consumes. When the bolt is fast
// again, back pressure releases and the tuples flow at full speed.
func TestBackPressureThrottlesTheSpoutToTheSlowBolt(t *testing.T) {
	stmgrtest.ForEachTransport(t, testBackPressureThrottlesTheSpoutToTheSlowBolt)
}

func testBackPressureThrottlesTheSpoutToTheSlowBolt(t *testing.T, inMemory bool) {
	c, s1, s2, _ := slowPath(t, inMemory, nil)
	sp := sampleQueues(t, s1, s2)
	startSlowFlow(c)
	stmgrtest.WaitFor(t, 20*time.Second, "back pressure initiated by the slow bolt's stream manager and announced to the spout's", func() bool {
		b1, b2 := s1.Counters().BackPressure, s2.Counters().BackPressure
		return b2.ByLocalInstanceNs > 0 && b2.Active && b1.Active && slices.Equal(b1.Announcing, []int{2})
	})

	// The spout emits at the bolt's pace: what is in flight (emitted, not
	// yet processed) stays bounded while the bolt processes many times
	// that amount.
	inFlight := func() int64 { return s1.Counters().TuplesFromInstances - int64(c.Count.Sink.Total()) }
	startAt := time.Now()
	start := c.Count.Sink.Total()
	startEmitted := s1.Counters().TuplesFromInstances
	var maxInFlight int64
	const window, bound = 120000, 60000
	stmgrtest.WaitFor(t, 3*time.Minute, "the slow bolt to process a window of tuples", func() bool {
		maxInFlight = max(maxInFlight, inFlight())
		return c.Count.Sink.Total()-start >= window
	})
	elapsed := time.Since(startAt)
	emitted := s1.Counters().TuplesFromInstances - startEmitted
	processed := int64(c.Count.Sink.Total() - start)
	t.Logf("under back pressure for %s: spout emitted %d tuples (%.0f/s) while the bolt processed %d (%.0f/s); at most %d in flight; largest queue %d bytes (high watermark %d)",
		elapsed, emitted, float64(emitted)/elapsed.Seconds(), processed, float64(processed)/elapsed.Seconds(), maxInFlight, sp.max.Load(), testHigh)
	// Every queue and socket on the path together hold a few watermarks'
	// worth of tuples (about 20 bytes each): without back pressure the
	// spout would be millions ahead. Over a window of twice that bound,
	// the spout emits what the bolt processes, give or take what the
	// buffers hold.
	if maxInFlight > bound {
		t.Errorf("%d tuples in flight under back pressure, want at most %d", maxInFlight, bound)
	}
	if emitted > processed+bound || emitted < processed-bound {
		t.Errorf("spout emitted %d tuples while the bolt processed %d: not throttled to the bolt's rate", emitted, processed)
	}

	c.Count.Sink.SetDelay(0)
	releaseAt := time.Now()
	stmgrtest.WaitFor(t, 20*time.Second, "back pressure to release on both stream managers", func() bool {
		b1, b2 := s1.Counters().BackPressure, s2.Counters().BackPressure
		return !b1.Active && !b2.Active
	})
	// Tuples flow again: the bolt processes another window. (How fast is
	// logged, not asserted: on a busy machine it says nothing about back
	// pressure.)
	released := time.Since(releaseAt)
	before, fastAt := c.Count.Sink.Total(), time.Now()
	stmgrtest.WaitFor(t, 2*time.Minute, "flow after the release", func() bool {
		return c.Count.Sink.Total()-before >= window
	})
	fast := time.Since(fastAt)
	t.Logf("released %s after the bolt became fast; then %d tuples in %s (%.0f/s; %s under back pressure)", released, window, fast, window/fast.Seconds(), elapsed)
	sp.done()
	if got := sp.max.Load(); got > testHigh+margin {
		t.Errorf("a queue held %d bytes, want at most the high watermark %d plus %d", got, testHigh, margin)
	}
	b1, b2 := s1.Counters(), s2.Counters()
	if b1.TuplesLost+b2.TuplesLost != 0 {
		t.Errorf("tuples lost under back pressure: %d, %d", b1.TuplesLost, b2.TuplesLost)
	}
	if b2.BackPressure.ThrottledNs <= 0 || b1.BackPressure.AnnouncedByPeersNs <= 0 {
		t.Errorf("back pressure time not accounted: %+v, %+v", b1.BackPressure, b2.BackPressure)
	}
}

// TestBackPressureSurvivesKillingTheSlowInstance: the slow bolt dies while
// back pressure is on. Its queue no longer counts, back pressure releases
// and the spout runs again; when the bolt comes back, its tuples flow.
func TestBackPressureSurvivesKillingTheSlowInstance(t *testing.T) {
	stmgrtest.ForEachTransport(t, testBackPressureSurvivesKillingTheSlowInstance)
}

func testBackPressureSurvivesKillingTheSlowInstance(t *testing.T, inMemory bool) {
	c, s1, s2, slow := slowPath(t, inMemory, nil)
	startSlowFlow(c)
	stmgrtest.WaitFor(t, 20*time.Second, "back pressure", func() bool {
		return s1.Counters().BackPressure.Active && s2.Counters().BackPressure.Active
	})

	c.Count.Sink.SetDelay(0) // the instance stops quickly
	if err := slow.Stop(t); err != nil {
		t.Logf("slow instance: %v", err)
	}
	stmgrtest.WaitFor(t, 20*time.Second, "back pressure to release after the slow instance died", func() bool {
		return !s1.Counters().BackPressure.Active && !s2.Counters().BackPressure.Active
	})
	emitted := s1.Counters().TuplesFromInstances
	stmgrtest.WaitFor(t, 20*time.Second, "the spout to be read again", func() bool {
		return s1.Counters().TuplesFromInstances > emitted+10000
	})

	c.StartInstance(2, 2, smallQueue)
	before := c.Count.Sink.Total()
	stmgrtest.WaitFor(t, 20*time.Second, "tuples to flow to the restarted bolt", func() bool {
		return c.Count.Sink.Total() > before+10000
	})
}

// fakePeer is a peer stream manager of container 2 that only announces
// back pressure to a stream manager.
type fakePeer struct {
	t    *testing.T
	conn net.Conn
}

func dialFakePeer(t *testing.T, s *stmgr.StMgr) *fakePeer {
	t.Helper()
	conn, err := net.Dial("tcp", net.JoinHostPort("127.0.0.1", itoa(s.Port())))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	if err := wire.WriteMessage(conn, &egretpb.StMgrHello{TopologyId: stmgrtest.TopologyID, Container: 2}); err != nil {
		t.Fatal(err)
	}
	_, m, _, err := wire.ReadMessage(bufio.NewReader(conn), nil, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	if r, ok := m.(*egretpb.StMgrHelloResponse); !ok || r.GetError() != "" {
		t.Fatalf("hello refused: %v", m)
	}
	return &fakePeer{t: t, conn: conn}
}

func (p *fakePeer) announce(active bool) {
	p.t.Helper()
	cause := wire.CauseNone
	if active {
		cause = wire.CauseLocalInstance
	}
	if _, err := p.conn.Write(wire.AppendBackPressure(nil, wire.BackPressure{Container: 2, Active: active, Cause: cause})); err != nil {
		p.t.Fatal(err)
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

// TestPeerAnnouncementsAreState: a peer's announcement throttles the
// spouts until the peer sends a release, stops re-sending it (a lost
// release: it expires) or its connection closes.
func TestPeerAnnouncementsAreState(t *testing.T) {
	for _, end := range []string{"release", "expiry", "close"} {
		t.Run(end, func(t *testing.T) {
			c := bpCluster(t, func(int) int { return 1 })
			c.BackPressureInterval = 20 * time.Millisecond
			c.BackPressureExpiry = 5
			if end != "expiry" {
				c.BackPressureExpiry = 1 << 20 // never within the test
			}
			s := c.StartStMgr(1)
			c.StartInstance(1, 1)
			c.StartInstance(2, 1)
			c.WaitConnected(map[int]int{1: 2})
			c.Count.Limit.Set(1 << 40)
			stmgrtest.WaitFor(t, 20*time.Second, "tuples", func() bool { return c.Count.Sink.Total() > 1000 })

			p := dialFakePeer(t, s)
			p.announce(true)
			stmgrtest.WaitFor(t, 20*time.Second, "the peer's announcement to throttle the spout", func() bool {
				b := s.Counters().BackPressure
				return b.Active && !b.Initiated && slices.Equal(b.Announcing, []int{2})
			})
			// Throttled: the spout's frames stop. Then the count stands
			// still (an expiring announcement may end before that shows).
			last := s.Counters().TuplesFromInstances
			if end != "expiry" {
				stable := 0
				last = -1
				stmgrtest.WaitFor(t, 20*time.Second, "the spout's tuples to stop", func() bool {
					n := s.Counters().TuplesFromInstances
					if n == last {
						stable++
					} else {
						stable, last = 0, n
					}
					return stable >= 20 // 100ms of polls without a frame
				})
			}
			switch end {
			case "release":
				p.announce(false)
			case "expiry":
				// Nothing: the announcement is not re-sent.
			case "close":
				_ = p.conn.Close()
			}
			stmgrtest.WaitFor(t, 20*time.Second, "the announcement to end ("+end+")", func() bool {
				b := s.Counters().BackPressure
				return !b.Active && len(b.Announcing) == 0
			})
			stmgrtest.WaitFor(t, 20*time.Second, "the spout to be read again", func() bool {
				return s.Counters().TuplesFromInstances > last+1000
			})
			if b := s.Counters().BackPressure; b.AnnouncedByPeersNs <= 0 || b.ThrottledNs < b.AnnouncedByPeersNs {
				t.Errorf("times: %+v; want time announced by peers, all of it throttled", b)
			}
		})
	}
}

// TestCorruptBackPressureFrameClosesThePeer: a malformed announcement is
// a protocol error.
func TestCorruptBackPressureFrameClosesThePeer(t *testing.T) {
	c := bpCluster(t, func(int) int { return 1 })
	s := c.StartStMgr(1)
	p := dialFakePeer(t, s)
	// Claims to speak for container 3 on container 2's connection.
	if _, err := p.conn.Write(wire.AppendBackPressure(nil, wire.BackPressure{Container: 3, Active: true})); err != nil {
		t.Fatal(err)
	}
	stmgrtest.WaitFor(t, 20*time.Second, "the connection to be rejected", func() bool { return s.Counters().ConnectionsRejected == 1 })
	if b := s.Counters().BackPressure; b.Active || len(b.Announcing) != 0 {
		t.Errorf("back pressure from a rejected frame: %+v", b)
	}
}

// TestDropModeKeepsTheSpoutRunningAndCountsDrops: with
// topology.droptuples.upon.backpressure the spout's stream manager keeps
// reading the spout during back pressure and drops its tuples, counting
// them; queues stay bounded and nothing else is lost.
func TestDropModeKeepsTheSpoutRunningAndCountsDrops(t *testing.T) {
	stmgrtest.ForEachTransport(t, testDropModeKeepsTheSpoutRunningAndCountsDrops)
}

func testDropModeKeepsTheSpoutRunningAndCountsDrops(t *testing.T, inMemory bool) {
	c, s1, s2, _ := slowPath(t, inMemory, func(b *api.TopologyBuilder) {
		b.SetConfig(topology.KeyDropTuplesUponBackPressure, "true")
	})
	sp := sampleQueues(t, s1, s2)
	startSlowFlow(c)
	stmgrtest.WaitFor(t, 20*time.Second, "back pressure on the spout's stream manager", func() bool { return s1.Counters().BackPressure.Active })
	start := c.Count.Sink.Total()
	startIn, startDropped := s1.Counters().TuplesFromInstances, s1.Counters().TuplesDroppedBackPressure
	const window = 20000
	stmgrtest.WaitFor(t, 3*time.Minute, "the slow bolt to process a window of tuples", func() bool { return c.Count.Sink.Total()-start >= window })
	in := s1.Counters().TuplesFromInstances - startIn
	dropped := s1.Counters().TuplesDroppedBackPressure - startDropped
	processed := int64(c.Count.Sink.Total() - start)
	t.Logf("drop mode: the spout sent %d tuples while the bolt processed %d; %d dropped; largest queue %d bytes", in, processed, dropped, sp.max.Load())
	if dropped <= processed {
		t.Errorf("drop mode dropped %d tuples while the slow bolt processed %d; want the spout to keep running far ahead", dropped, processed)
	}
	sp.done()
	if got := sp.max.Load(); got > testHigh+margin {
		t.Errorf("a queue held %d bytes, want at most the high watermark %d plus %d", got, testHigh, margin)
	}
	if lost := s1.Counters().TuplesLost + s2.Counters().TuplesLost; lost != 0 {
		t.Errorf("tuples lost other than by drop mode: %d", lost)
	}
}
