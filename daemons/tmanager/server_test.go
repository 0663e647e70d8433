package tmanager

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/egret-stream/egret/daemons/wire"
	"github.com/egret-stream/egret/proto/egretpb"
)

func frame(typ byte, payload []byte) []byte {
	return wire.AppendFrame(nil, wire.FrameType(typ), payload)
}

func TestBadFramesCloseOnlyThatConnection(t *testing.T) {
	e := newEnv(t, false)
	m := e.start(t, withSettings(KeyMaxFrameBytes, "64KiB"))
	ss, _ := registerAll(t, m, 2, 1)

	oversize := binary.BigEndian.AppendUint32(nil, 64<<10+1)
	oversize = append(oversize, byte(wire.FrameMetricsPublish))
	for _, tc := range []struct {
		name string
		data []byte
	}{
		{"garbage", []byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n")},
		{"oversized length", oversize},
		{"huge length", []byte{0xff, 0xff, 0xff, 0xff, 0x40}},
		{"empty frame", []byte{0, 0, 0, 0}},
		{"unknown type", frame(0xee, []byte("hello"))},
		{"data frame", frame(byte(wire.FrameData), make([]byte, 8))},
		{"frame meant for instances", frame(byte(wire.FrameRegisterInstanceRequest), nil)},
		{"undecodable register", frame(byte(wire.FrameStMgrRegisterRequest), []byte{0xff, 0xff, 0xff})},
		{"undecodable metrics", frame(byte(wire.FrameMetricsPublish), []byte{0x0a, 0x50, 0x01})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := dial(t, m.ep.ServerAddr)
			s.write(tc.data)
			s.waitClosed()
		})
	}
	// The registered stream managers and the HTTP API are unaffected.
	for i, s := range ss {
		if r := s.heartbeat(i + 1); r.GetError() != "" {
			t.Fatalf("container %d: %s", i+1, r.GetError())
		}
	}
	if h := m.health(t); !h.Complete || h.Version != 1 {
		t.Fatalf("health: %+v", h)
	}
	if m.logs.FilterMessage("closing connection after a protocol error").Len() < 5 {
		t.Fatal("protocol errors were not logged")
	}
}

func TestMetricsAggregation(t *testing.T) {
	e := newEnv(t, false)
	m := e.start(t)
	pub := dial(t, m.ep.ServerAddr) // a metrics manager
	reports := []*egretpb.MetricsPublish{
		{Source: "instance", Container: 1, Component: "words", TaskId: 1, UnixNanos: 10,
			Metrics: []*egretpb.Metric{{Name: "emit-count", Value: 5}, {Name: "ack-count", Value: 2}}},
		{Source: "instance", Container: 2, Component: "words", TaskId: 2, UnixNanos: 11,
			Metrics: []*egretpb.Metric{{Name: "emit-count", Value: 7}}},
		// A later report replaces task 1's value.
		{Source: "instance", Container: 1, Component: "words", TaskId: 1, UnixNanos: 12,
			Metrics: []*egretpb.Metric{{Name: "emit-count", Value: 6}}},
		{Source: "instance", Container: 1, Component: "count", TaskId: 3, UnixNanos: 13,
			Metrics:    []*egretpb.Metric{{Name: "execute-count", Value: 4}},
			Exceptions: []*egretpb.ExceptionReport{{Message: "boom", Stack: "at count.go:10", Count: 2}}},
		{Source: "stmgr", Container: 1, UnixNanos: 14, Metrics: []*egretpb.Metric{{Name: "lost-tuples", Value: 1}}},
	}
	for _, r := range reports {
		pub.send(r)
	}
	var st statsJSON
	waitFor(t, "the metrics to be aggregated", func() bool {
		getJSON(t, m.url("/stats"), &st)
		return st.Reports == int64(len(reports))
	})
	words := st.Components["words"]
	if words == nil || words.Sums["emit-count"] != 13 || words.Tasks["1"].Metrics["emit-count"] != 6 ||
		words.Tasks["1"].Metrics["ack-count"] != 2 || words.Tasks["2"].Container != 2 {
		t.Fatalf("words stats: %+v", words)
	}
	if c := st.Components["count"]; c == nil || c.Sums["execute-count"] != 4 {
		t.Fatalf("count stats: %+v", c)
	}
	if st.Totals["emit-count"] != 13 || st.Totals["execute-count"] != 4 {
		t.Fatalf("totals: %v", st.Totals)
	}
	if st.Containers["1"]["stmgr"].Metrics["lost-tuples"] != 1 {
		t.Fatalf("containers: %+v", st.Containers)
	}
	var exc struct {
		Exceptions map[string][]exceptionJSON `json:"exceptions"`
	}
	getJSON(t, m.url("/exceptions?component=count"), &exc)
	if l := exc.Exceptions["count"]; len(l) != 1 || l[0].Message != "boom" || l[0].Count != 2 || l[0].Task != 3 {
		t.Fatalf("exceptions: %+v", exc)
	}
	if resp, err := httpClient.Get(m.url("/exceptions?limit=x")); err != nil || resp.StatusCode != 400 {
		t.Fatalf("bad limit: %v %v", resp, err)
	} else {
		resp.Body.Close()
	}
	// The metrics connection is never written to and stays open.
	select {
	case msg := <-pub.msgs:
		t.Fatalf("the topology manager wrote %T to a metrics connection", msg)
	case <-pub.closed:
		t.Fatal("metrics connection closed")
	default:
	}
}

func getJSON(t *testing.T, url string, v any) {
	t.Helper()
	resp, err := httpClient.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("GET %s: %d %s", url, resp.StatusCode, b)
	}
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatal(err)
	}
}

// The executor reports resource metrics and exceptions for the instances
// of its container (issue 19): they join the task's own metrics, and the
// exceptions are the component's.
func TestMetricsStoreMergesExecutorReports(t *testing.T) {
	s := newMetricsStore(Limits{MaxMetricSources: 10, MaxMetricNames: 10, MaxExceptions: 10})
	now := time.Unix(100, 0)
	s.add(&egretpb.MetricsPublish{Source: "instance", Component: "count", TaskId: 7, Container: 1,
		Metrics: []*egretpb.Metric{{Name: "instance.executed", Value: 10}}}, now)
	s.add(&egretpb.MetricsPublish{Source: "executor", Component: "count", TaskId: 7, Container: 1,
		Metrics:    []*egretpb.Metric{{Name: "resource.memory.oom.kills", Value: 1}},
		Exceptions: []*egretpb.ExceptionReport{{Message: "task 7 (count) exceeded its memory limit of 512 MiB, restarted"}}}, now)
	st := s.stats("t", "id", []string{"count"})
	task := st.Components["count"].Tasks["7"]
	if task == nil || task.Metrics["instance.executed"] != 10 || task.Metrics["resource.memory.oom.kills"] != 1 {
		t.Fatalf("task 7 = %+v, want both reports merged", task)
	}
	if st.Components["count"].Sums["resource.memory.oom.kills"] != 1 {
		t.Fatalf("sums = %v", st.Components["count"].Sums)
	}
	ex := s.exceptionsOf("count", 0)["count"]
	if len(ex) != 1 || ex[0].Task != 7 || !strings.Contains(ex[0].Message, "exceeded its memory limit") {
		t.Fatalf("exceptions of count = %+v", ex)
	}
}

func TestMetricsStoreBounds(t *testing.T) {
	s := newMetricsStore(Limits{MaxMetricSources: 3, MaxMetricNames: 2, MaxExceptions: 2})
	now := time.Unix(100, 0)
	for task := int32(1); task <= 5; task++ {
		s.add(&egretpb.MetricsPublish{Source: "instance", Component: "c", TaskId: task,
			Metrics: []*egretpb.Metric{{Name: "a", Value: 1}, {Name: "b", Value: 1}, {Name: "c", Value: 1}}}, now)
	}
	st := s.stats("t", "id", nil)
	tasks := st.Components["c"].Tasks
	if len(tasks) != 3 || tasks["3"] == nil || tasks["4"] == nil || tasks["5"] == nil {
		t.Fatalf("kept tasks %v, want the 3 most recent", tasks)
	}
	if len(tasks["5"].Metrics) != 2 {
		t.Fatalf("kept %d metric names, limit 2", len(tasks["5"].Metrics))
	}
	if st.Dropped["sources"] != 2 || st.Dropped["metric_names"] != 5 {
		t.Fatalf("dropped = %v", st.Dropped)
	}
	// Non-finite values would break the JSON; they are dropped.
	s.add(&egretpb.MetricsPublish{Source: "instance", Component: "c", TaskId: 5,
		Metrics: []*egretpb.Metric{{Name: "a", Value: nan()}}}, now)
	if _, err := json.Marshal(s.stats("t", "id", nil)); err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		s.add(&egretpb.MetricsPublish{Source: "instance", Component: "c", TaskId: 1,
			Exceptions: []*egretpb.ExceptionReport{{Message: strings.Repeat("x", i+1)}}}, now)
	}
	if l := s.exceptionsOf("c", 0)["c"]; len(l) != 2 || l[0].Message != "xxxxx" {
		t.Fatalf("exceptions kept: %+v", l)
	}
	s.retainTasks(map[int]string{4: "c"})
	if tasks := s.stats("t", "id", nil).Components["c"].Tasks; len(tasks) != 1 || tasks["4"] == nil {
		t.Fatalf("after retainTasks: %v", tasks)
	}
}

func nan() float64 {
	var z float64
	return z / z
}

// memConn is an in-memory connection: reads come from a fixed input,
// writes are discarded.
type memConn struct {
	r *bytes.Reader
}

func (c *memConn) Read(p []byte) (int, error)  { return c.r.Read(p) }
func (c *memConn) Write(p []byte) (int, error) { return len(p), nil }
func (c *memConn) Close() error                { return nil }

// newTestServer builds a server over a memory state store with the test
// topology, without listeners.
func newTestServer(t testing.TB) *server {
	t.Helper()
	e := newEnv(t, false)
	s, err := Config{TopologyName: testName, TopologyID: testID, Host: "h", StateManager: e.admin,
		Settings: map[string]string{KeyMaxFrameBytes: "64KiB"}}.resolve()
	if err != nil {
		t.Fatal(err)
	}
	in, err := readInitial(t.Context(), s, e.st, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	ms := newMetricsStore(s.Limits)
	mgr, err := newManager(t.Context(), s, e.st, ms, in, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	return newServer(mgr, ms, s, zap.NewNop())
}
