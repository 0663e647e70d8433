package stmgr_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/egret-stream/egret/daemons/stmgr"
	"github.com/egret-stream/egret/daemons/stmgr/stmgrtest"
	"github.com/egret-stream/egret/daemons/wire"
	"github.com/egret-stream/egret/proto/egretpb"
)

// Tasks of the counting topology with two sink tasks: the spout is task
// 1 and the sinks tasks 2 and 3. Container 1 holds 1 and 2 (one hop from
// the spout), container 2 holds 3 (two hops).
func twoContainers(task int) int {
	if task == 3 {
		return 2
	}
	return 1
}

func startTwoContainers(t *testing.T, inMemory bool) (*stmgrtest.Cluster, map[int]*stmgrtest.Instance) {
	c := stmgrtest.NewCluster(t, 2, twoContainers)
	c.InMemory = inMemory
	c.StartStMgr(1)
	c.StartStMgr(2)
	in := map[int]*stmgrtest.Instance{}
	for task := 1; task <= 3; task++ {
		in[task] = c.StartInstance(task, twoContainers(task))
	}
	c.WaitConnected(map[int]int{1: 2, 2: 1})
	return c, in
}

func TestTwoContainersDeliverEveryTupleOnce(t *testing.T) {
	stmgrtest.ForEachTransport(t, testTwoContainersDeliverEveryTupleOnce)
}

func testTwoContainersDeliverEveryTupleOnce(t *testing.T, inMemory bool) {
	c, in := startTwoContainers(t, inMemory)
	for task, r := range in {
		if got := r.Stats.Direct.Load(); got != inMemory {
			t.Fatalf("instance of task %d: direct hand-off %v, want %v", task, got, inMemory)
		}
	}
	const n = 20000
	c.Count.Limit.Set(n)
	stmgrtest.WaitFor(t, 30*time.Second, fmt.Sprintf("%d tuples at the sinks", n), func() bool { return c.Count.Sink.Total() >= n })
	if err := c.Count.Sink.CheckExactlyOnce(0, n); err != nil {
		t.Fatal(err)
	}
	byTask := c.Count.Sink.ByTask()
	if byTask[2] == 0 || byTask[3] == 0 || byTask[2]+byTask[3] != n {
		t.Fatalf("tuples per sink task = %v; want both the local and the remote task to get some", byTask)
	}
	s1, s2 := c.StMgr(1).Counters(), c.StMgr(2).Counters()
	if s1.TuplesFromInstances != n {
		t.Errorf("stmgr 1 got %d tuples from its instances, want %d", s1.TuplesFromInstances, n)
	}
	if s1.TuplesToInstances != int64(byTask[2]) || s1.Instances[2].Tuples != int64(byTask[2]) {
		t.Errorf("stmgr 1 wrote %d tuples to instances (%d to task 2), want %d (one hop)", s1.TuplesToInstances, s1.Instances[2].Tuples, byTask[2])
	}
	if s1.TuplesToPeers != int64(byTask[3]) || s1.Peers[2].Tuples != int64(byTask[3]) {
		t.Errorf("stmgr 1 wrote %d tuples to peers, want %d", s1.TuplesToPeers, byTask[3])
	}
	if s2.TuplesFromPeers != int64(byTask[3]) || s2.TuplesToInstances != int64(byTask[3]) {
		t.Errorf("stmgr 2 got %d tuples from peers and wrote %d to task 3, want %d (two hops)", s2.TuplesFromPeers, s2.TuplesToInstances, byTask[3])
	}
	if s1.TuplesLost+s2.TuplesLost != 0 {
		t.Errorf("lost tuples on a healthy run: %d, %d", s1.TuplesLost, s2.TuplesLost)
	}
	if s1.ConnectionsRejected+s2.ConnectionsRejected != 0 {
		t.Errorf("rejected connections on a healthy run: %d, %d", s1.ConnectionsRejected, s2.ConnectionsRejected)
	}
	stmgrtest.WaitFor(t, 10*time.Second, "heartbeats", func() bool { return c.TM.Heartbeats() >= 2 })
}

// TestRejectedHeartbeatMakesTheStMgrRegisterAgain: a topology manager
// that evicted a stream manager answers its heartbeats with an error; the
// stream manager registers again.
func TestRejectedHeartbeatMakesTheStMgrRegisterAgain(t *testing.T) {
	c, _ := startTwoContainers(t, false)
	regs := c.TM.Registrations()
	c.TM.RejectHeartbeats(1)
	stmgrtest.WaitFor(t, 20*time.Second, "a new registration", func() bool { return c.TM.Registrations() > regs })
	c.WaitConnected(map[int]int{1: 2, 2: 1})
	c.Count.Limit.Set(1000)
	stmgrtest.WaitFor(t, 20*time.Second, "tuples", func() bool { return c.Count.Sink.Total() >= 1000 })
	if err := c.Count.Sink.CheckExactlyOnce(0, 1000); err != nil {
		t.Fatal(err)
	}
}

func TestStMgrRestartRewiresAndInstancesReconnect(t *testing.T) {
	stmgrtest.ForEachTransport(t, testStMgrRestartRewiresAndInstancesReconnect)
}

func testStMgrRestartRewiresAndInstancesReconnect(t *testing.T, inMemory bool) {
	c, in := startTwoContainers(t, inMemory)
	inst3 := in[3]
	const n1, n2 = 5000, 10000
	c.Count.Limit.Set(n1)
	stmgrtest.WaitFor(t, 30*time.Second, "the first tuples", func() bool { return c.Count.Sink.Total() >= n1 })
	if err := c.Count.Sink.CheckExactlyOnce(0, n1); err != nil {
		t.Fatal(err)
	}
	regs := c.TM.Registrations()
	oldPort := c.StMgr(2).Port()
	version := c.TM.Plan().GetVersion()

	c.StopStMgr(2)
	stmgrtest.WaitFor(t, 10*time.Second, "the instance of task 3 to notice", func() bool { return !inst3.Stats.Connected.Load() })
	s2 := c.StartStMgr(2)
	if s2.Port() == oldPort {
		t.Logf("the new stream manager reuses port %d", oldPort)
	}
	stmgrtest.WaitFor(t, 10*time.Second, "re-registration", func() bool {
		return c.TM.Registrations() > regs && c.TM.Plan().GetVersion() > version
	})
	c.WaitConnected(map[int]int{1: 2, 2: 1})
	// The stream manager counts the instance once its register request
	// arrives; the instance counts the registration once the answer does.
	stmgrtest.WaitFor(t, 10*time.Second, "task 3 to see its registration answered", func() bool { return inst3.Stats.Registrations.Load() >= 2 })
	if got := inst3.Stats.Registrations.Load(); got != 2 {
		t.Errorf("task 3 registered %d times, want 2 (the first time and after the restart)", got)
	}
	if got := c.Count.Sink.Prepared(); got != 2 {
		t.Errorf("%d sink instances were prepared, want 2: the component must survive the reconnection", got)
	}

	c.Count.Limit.Set(n2)
	stmgrtest.WaitFor(t, 30*time.Second, "tuples after the restart", func() bool {
		return c.Count.Sink.Distinct() >= n2
	})
	if err := c.Count.Sink.CheckExactlyOnce(0, n2); err != nil {
		t.Fatal(err)
	}
	if got := c.Count.Sink.ByTask()[3]; got <= n1/2 {
		t.Errorf("task 3 received %d tuples in total; the remote path did not resume", got)
	}
}

// TestMetricsPublished runs a fake metrics manager on container 1's socket
// and checks that the stream manager and the instances publish.
func TestMetricsPublished(t *testing.T) {
	c := stmgrtest.NewCluster(t, 1, func(int) int { return 1 })
	ln, err := net.Listen("unix", c.MetricsSocket(1))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	got := make(chan *egretpb.MetricsPublish, 64)
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer conn.Close()
				br := bufio.NewReader(conn)
				for {
					_, m, _, err := wire.ReadMessage(br, nil, wire.DefaultMaxFrame)
					if err != nil {
						return
					}
					select {
					case got <- m.(*egretpb.MetricsPublish):
					default:
					}
				}
			}()
		}
	}()
	c.StartStMgr(1)
	c.StartInstance(1, 1)
	c.StartInstance(2, 1)
	c.Count.Limit.Set(100)
	sources := map[string]bool{}
	deadline := time.After(20 * time.Second)
	for !sources["stmgr"] || !sources["instance"] {
		select {
		case m := <-got:
			names := map[string]bool{}
			for _, x := range m.GetMetrics() {
				names[x.GetName()] = true
			}
			switch m.GetSource() {
			case "stmgr":
				if names["stmgr.tuples.lost"] && names["process.rss.bytes"] {
					sources["stmgr"] = true
				}
			case "instance":
				if names["instance.emitted"] && names["process.cpu.seconds"] && m.GetComponent() != "" {
					sources["instance"] = true
				}
			}
		case <-deadline:
			t.Fatalf("metrics received from %v; want stmgr and instance", sources)
		}
	}
}

// TestBadInputClosesOnlyThatConnection sends garbage, oversized lengths,
// unknown frame types and bad handshakes to the Unix socket and the TCP
// port: each connection is closed with a logged error, and the stream
// manager keeps serving.
func TestBadInputClosesOnlyThatConnection(t *testing.T) {
	c := stmgrtest.NewCluster(t, 1, func(int) int { return 1 })
	c.Settings[stmgr.KeyMaxFrameBytes] = "1MiB"
	s := c.StartStMgr(1)
	c.StartInstance(1, 1)
	c.StartInstance(2, 1)
	c.WaitConnected(map[int]int{1: 2})

	register, _ := wire.AppendMessage(nil, &egretpb.RegisterInstanceRequest{TopologyId: "another", TaskId: 2, Component: "x"})
	hello, _ := wire.AppendMessage(nil, &egretpb.StMgrHello{TopologyId: stmgrtest.TopologyID, Container: 7})
	wrongHello, _ := wire.AppendMessage(nil, &egretpb.StMgrHello{TopologyId: "other", Container: 7})
	unknown := []byte{0, 0, 0, 1, 200}
	oversize := []byte{0x00, 0x20, 0x00, 0x00, byte(wire.FrameData)} // 2 MiB > 1 MiB limit
	data := wire.AppendDataFrame(nil, &wire.Batch{Dest: 2, Count: 1, Buf: []byte{1}})
	badProto := []byte{0, 0, 0, 3, byte(wire.FrameStMgrHello), 0xff, 0xff}
	lying := []byte{0, 0, 0, 9, byte(wire.FrameData), 0, 0, 0, 2, 0, 0, 0, 5} // 5 tuples in 0 bytes
	cat := func(parts ...[]byte) []byte {
		var out []byte
		for _, p := range parts {
			out = append(out, p...)
		}
		return out
	}
	tcp := fmt.Sprintf("127.0.0.1:%d", s.Port())
	cases := []struct {
		name, network, addr string
		send                []byte
		wantRefusal         bool // a handshake answer comes before the close
	}{
		{"unix garbage", "unix", c.Socket(1), []byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n"), false},
		{"unix oversize", "unix", c.Socket(1), oversize, false},
		{"unix unknown type", "unix", c.Socket(1), unknown, false},
		{"unix data before registration", "unix", c.Socket(1), data, false},
		{"unix bad protobuf", "unix", c.Socket(1), badProto, false},
		{"unix wrong topology id", "unix", c.Socket(1), register, true},
		{"tcp garbage", "tcp", tcp, []byte("\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03garbage"), false},
		{"tcp oversize", "tcp", tcp, oversize, false},
		{"tcp unknown type", "tcp", tcp, unknown, false},
		{"tcp wrong topology", "tcp", tcp, wrongHello, true},
		{"tcp unknown type after hello", "tcp", tcp, cat(hello, unknown), true},
		{"tcp lying data frame after hello", "tcp", tcp, cat(hello, lying), true},
		{"tcp control frame after hello", "tcp", tcp, cat(hello, hello), true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := s.Counters().ConnectionsRejected
			conn, err := net.Dial(tc.network, tc.addr)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			if _, err := conn.Write(tc.send); err != nil {
				t.Fatal(err)
			}
			_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
			br := bufio.NewReader(conn)
			if tc.wantRefusal {
				if _, _, _, err := wire.ReadMessage(br, nil, wire.DefaultMaxFrame); err != nil {
					t.Fatalf("expected a handshake answer: %v", err)
				}
			}
			if _, err := br.ReadByte(); err == nil {
				t.Fatal("the connection stayed open after bad input")
			} else if ne, ok := err.(net.Error); ok && ne.Timeout() {
				t.Fatal("the connection was not closed within 10s")
			}
			stmgrtest.WaitFor(t, 10*time.Second, "the rejection to be counted", func() bool {
				return s.Counters().ConnectionsRejected > before
			})
		})
	}
	errorsLogged := 0
	for _, e := range c.Logs.FilterMessage("closing connection").All() {
		if _, ok := e.ContextMap()["peer"]; ok && e.Level.String() == "error" {
			errorsLogged++
		}
	}
	if errorsLogged < len(cases)-2 {
		t.Errorf("%d errors naming the peer were logged for %d bad connections", errorsLogged, len(cases))
	}
	// Still serving: the healthy instances deliver tuples.
	c.Count.Limit.Set(1000)
	stmgrtest.WaitFor(t, 20*time.Second, "tuples after the bad connections", func() bool { return c.Count.Sink.Total() >= 1000 })
	if err := c.Count.Sink.CheckExactlyOnce(0, 1000); err != nil {
		t.Fatal(err)
	}
	// A well-behaved peer is still accepted.
	conn, err := net.Dial("tcp", tcp)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.Write(hello); err != nil {
		t.Fatal(err)
	}
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	_, m, _, err := wire.ReadMessage(bufio.NewReader(conn), nil, wire.DefaultMaxFrame)
	if err != nil {
		t.Fatal(err)
	}
	if r, ok := m.(*egretpb.StMgrHelloResponse); !ok || r.GetError() != "" {
		t.Fatalf("hello answered with %v", m)
	}
}

// TestTManagerRestart restarts the topology manager (new session, new
// port) while tuples flow: the stream managers find it through the state
// manager, register again and heartbeat, and the data plane, whose peers
// did not move, loses nothing. The new topology manager either continues
// the plan versions (as the real one does, from /pplans) or starts them
// again (its registration response is then adopted).
func TestTManagerRestart(t *testing.T) {
	for _, keep := range []bool{true, false} {
		t.Run(fmt.Sprintf("versions kept %v", keep), func(t *testing.T) { testTManagerRestart(t, keep) })
	}
}

func testTManagerRestart(t *testing.T, keepVersions bool) {
	c, _ := startTwoContainers(t, false)
	const n = 20000
	c.Count.Limit.Set(n)
	c.RestartTManager(keepVersions)
	stmgrtest.WaitFor(t, 20*time.Second, "both stream managers to register with the new topology manager", func() bool {
		return c.TM.Registrations() == 2 && c.TM.Plan() != nil
	})
	c.WaitConnected(map[int]int{1: 2, 2: 1})
	stmgrtest.WaitFor(t, 20*time.Second, "heartbeats to the new topology manager", func() bool { return c.TM.Heartbeats() >= 2 })
	for _, id := range []int{1, 2} {
		if got := c.StMgr(id).Counters().TManagerRegistrations; got != 2 {
			t.Errorf("stream manager %d registered %d times, want 2", id, got)
		}
	}
	stmgrtest.WaitFor(t, 30*time.Second, "every tuple", func() bool { return c.Count.Sink.Total() >= n })
	if err := c.Count.Sink.CheckExactlyOnce(0, n); err != nil {
		t.Fatal(err)
	}
}

// nullSink is an instance's frame handler that discards what it gets.
type nullSink struct{}

func (nullSink) HandleData(context.Context, uint32, int, []byte) error { return nil }
func (nullSink) HandleFrame(context.Context, []byte) error             { return nil }

// directPeer is what the stream manager attaches for an in-process
// instance.
type directPeer interface {
	HandleData(ctx context.Context, dest uint32, count int, records []byte) error
	HandleFrame(ctx context.Context, body []byte) error
}

// TestDirectBadFramesCloseTheConnection: an in-process instance that hands
// the stream manager an oversized batch or a frame of an unknown type gets
// the error a socket reader gives, its connection is closed and counted
// rejected, and the other instances keep running.
func TestDirectBadFramesCloseTheConnection(t *testing.T) {
	c := stmgrtest.NewCluster(t, 1, func(int) int { return 1 })
	c.InMemory = true
	c.Settings[stmgr.KeyMaxFrameBytes] = "1MiB"
	s := c.StartStMgr(1)
	c.StartInstance(1, 1)
	c.StartInstance(2, 1)
	c.WaitConnected(map[int]int{1: 2})
	cases := []struct {
		name string
		call func(directPeer) error
		want error
	}{
		{"oversized batch", func(p directPeer) error {
			return p.HandleData(context.Background(), 2, 1, make([]byte, 1<<20))
		}, wire.ErrFrameTooLarge},
		{"unknown frame type", func(p directPeer) error {
			return p.HandleFrame(context.Background(), []byte{200})
		}, wire.ErrCorrupt},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := s.Counters().ConnectionsRejected
			conn, err := c.DialInMemory(context.Background(), 1)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			conn.(interface{ Attach(any) }).Attach(nullSink{})
			// Task 9 is not in the plan: it registers and waits.
			if err := wire.WriteMessage(conn, &egretpb.RegisterInstanceRequest{TopologyId: stmgrtest.TopologyID, TaskId: 9}); err != nil {
				t.Fatal(err)
			}
			if _, _, _, err := wire.ReadMessage(bufio.NewReader(conn), nil, 1<<20); err != nil {
				t.Fatal(err)
			}
			peer, ok := conn.(interface{ Peer() any }).Peer().(directPeer)
			if !ok {
				t.Fatal("the stream manager attached no frame handler")
			}
			if err := tc.call(peer); !errors.Is(err, tc.want) {
				t.Fatalf("error %v, want %v", err, tc.want)
			}
			_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
			if _, err := conn.Read(make([]byte, 1)); err == nil {
				t.Fatal("the connection is still open")
			}
			if got := s.Counters().ConnectionsRejected; got != before+1 {
				t.Errorf("rejected connections %d, want %d", got, before+1)
			}
		})
	}
	c.Count.Limit.Set(1000)
	stmgrtest.WaitFor(t, 20*time.Second, "tuples after the bad connections", func() bool { return c.Count.Sink.Total() >= 1000 })
}
