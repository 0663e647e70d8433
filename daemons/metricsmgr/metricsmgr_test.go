package metricsmgr

import (
	"bufio"
	"context"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/egret-stream/egret/core/spi"
	"github.com/egret-stream/egret/core/state"
	"github.com/egret-stream/egret/daemons/wire"
	"github.com/egret-stream/egret/proto/egretpb"
	"github.com/egret-stream/egret/statemgr/memory"
)

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

type harness struct {
	cfg   Config
	stats *Stats
	done  chan struct{}
}

func start(t *testing.T, cfg Config) *harness {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan struct{})
	cfg.Ready = func() { close(ready) }
	cfg.stats = &Stats{}
	h := &harness{cfg: cfg, done: make(chan struct{})}
	go func() {
		defer close(h.done)
		s, err := run(ctx, cfg, zaptest.NewLogger(t))
		if err != nil {
			t.Errorf("run: %v", err)
		}
		h.stats = s
	}()
	t.Cleanup(func() { cancel(); <-h.done })
	select {
	case <-ready:
	case <-time.After(10 * time.Second):
		t.Fatal("metrics manager did not start")
	}
	return h
}

// statsNow returns the counters of the running metrics manager.
func (h *harness) statsNow() *Stats { return h.cfg.stats }

func publish(t *testing.T, socket string, reports ...*egretpb.MetricsPublish) net.Conn {
	t.Helper()
	conn, err := net.Dial("unix", socket)
	if err != nil {
		t.Fatal(err)
	}
	var buf []byte
	for _, m := range reports {
		buf, err = wire.AppendMessage(buf, m)
		if err != nil {
			t.Fatal(err)
		}
	}
	if _, err := conn.Write(buf); err != nil {
		t.Fatal(err)
	}
	return conn
}

func report(task int32, v float64) *egretpb.MetricsPublish {
	return &egretpb.MetricsPublish{Source: "instance", Component: "split", TaskId: task,
		Metrics: []*egretpb.Metric{{Name: "executed", Value: v}}}
}

func lines(path string) []string {
	b, _ := os.ReadFile(path)
	s := strings.TrimSpace(string(b))
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

func TestFileSinkWritesEveryReport(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "metrics.jsonl")
	h := start(t, Config{Container: 2, Socket: filepath.Join(dir, "m.sock"), Sinks: []string{SinkFile}, FilePath: file})
	conn := publish(t, h.cfg.Socket, report(1, 10), report(2, 20), report(3, 30))
	defer conn.Close()
	waitFor(t, "three lines in the file sink", func() bool { return len(lines(file)) == 3 })
	got := lines(file)
	if !strings.Contains(got[0], `"taskId":1`) || !strings.Contains(got[0], `"container":2`) {
		t.Errorf("first line %s lacks the task id or the container filled in", got[0])
	}
}

func TestFileSinkRotatesAtCap(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "metrics.jsonl")
	h := start(t, Config{Container: 1, Socket: filepath.Join(dir, "m.sock"), Sinks: []string{SinkFile}, FilePath: file, FileMaxBytes: 400})
	var reports []*egretpb.MetricsPublish
	for i := 0; i < 20; i++ {
		reports = append(reports, report(int32(i), float64(i)))
	}
	conn := publish(t, h.cfg.Socket, reports...)
	defer conn.Close()
	waitFor(t, "rotation", func() bool { _, err := os.Stat(file + ".1"); return err == nil })
	waitFor(t, "the last report", func() bool {
		l := lines(file)
		return len(l) > 0 && strings.Contains(l[len(l)-1], `"taskId":19`)
	})
	if st, _ := os.Stat(file); st.Size() > 400 {
		t.Errorf("file is %d bytes, above its 400-byte cap", st.Size())
	}
	if _, err := os.Stat(file + ".2"); err == nil {
		t.Errorf("%s.2 exists: the default keeps one rotated file", file)
	}
}

// TestFileSinkKeepsMaxFiles: FileMaxFiles rotated files are kept, the
// oldest deleted beyond them.
func TestFileSinkKeepsMaxFiles(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "metrics.jsonl")
	h := start(t, Config{Container: 1, Socket: filepath.Join(dir, "m.sock"), Sinks: []string{SinkFile}, FilePath: file, FileMaxBytes: 400, FileMaxFiles: 3})
	var reports []*egretpb.MetricsPublish
	for i := 0; i < 40; i++ {
		reports = append(reports, report(int32(i), float64(i)))
	}
	conn := publish(t, h.cfg.Socket, reports...)
	defer conn.Close()
	waitFor(t, "the last report", func() bool {
		l := lines(file)
		return len(l) > 0 && strings.Contains(l[len(l)-1], `"taskId":39`)
	})
	for _, suffix := range []string{".1", ".2", ".3"} {
		if _, err := os.Stat(file + suffix); err != nil {
			t.Errorf("rotated file %s%s: %v", file, suffix, err)
		}
	}
	if _, err := os.Stat(file + ".4"); err == nil {
		t.Errorf("%s.4 exists: only 3 rotated files may be kept", file)
	}
}

func TestGarbageClosesOnlyThatConnection(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "metrics.jsonl")
	h := start(t, Config{Container: 1, Socket: filepath.Join(dir, "m.sock"), Sinks: []string{SinkFile}, FilePath: file, MaxFrame: 1 << 10})
	for _, garbage := range [][]byte{
		[]byte("GET / HTTP/1.1\r\n\r\n"),                         // unknown frame type / huge length
		{0, 0, 0, 0},                                             // empty frame
		{0xff, 0xff, 0xff, 0xff, 1},                              // oversize
		{0, 0, 0, 3, byte(wire.FrameData), 1, 2},                 // wrong frame type for this socket
		{0, 0, 0, 3, byte(wire.FrameMetricsPublish), 0xff, 0xff}, // bad protobuf
	} {
		conn, err := net.Dial("unix", h.cfg.Socket)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := conn.Write(garbage); err != nil {
			t.Fatal(err)
		}
		_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
		if _, err := bufio.NewReader(conn).ReadByte(); err == nil {
			t.Errorf("garbage %q: connection still open", garbage)
		}
		conn.Close()
	}
	conn := publish(t, h.cfg.Socket, report(7, 1))
	defer conn.Close()
	waitFor(t, "a good report after the garbage", func() bool { return len(lines(file)) == 1 })
}

func TestTManagerSinkForwardsAndReconnects(t *testing.T) {
	dir := t.TempDir()
	store := memory.NewStore()
	sm := store.NewSession()
	defer sm.Close()

	// A fake topology manager server port that records the reports.
	var mu sync.Mutex
	var got []int32
	var conns []net.Conn
	listen := func() net.Listener {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				mu.Lock()
				conns = append(conns, c)
				mu.Unlock()
				go func() {
					defer c.Close()
					r := bufio.NewReader(c)
					var buf []byte
					for {
						ft, p, nb, err := wire.ReadFrame(r, buf, wire.DefaultMaxFrame)
						buf = nb
						if err != nil {
							return
						}
						m, err := wire.DecodeMessage(ft, p)
						if err != nil {
							t.Errorf("tmanager got a bad frame: %v", err)
							return
						}
						mu.Lock()
						got = append(got, m.(*egretpb.MetricsPublish).GetTaskId())
						mu.Unlock()
					}
				}()
			}
		}()
		return ln
	}
	register := func(ln net.Listener) {
		port := ln.Addr().(*net.TCPAddr).Port
		if err := state.New(sm).SetPhysicalPlan(context.Background(), "wc", &egretpb.PhysicalPlan{}); err != nil {
			t.Fatal(err)
		}
		_ = sm.Delete(context.Background(), state.Path(state.TManagersDir, "wc"), -1)
		if err := state.New(sm).RegisterTManager(context.Background(), &egretpb.TManagerLocation{TopologyName: "wc", Host: "127.0.0.1", ServerPort: int32(port)}); err != nil {
			t.Fatal(err)
		}
	}
	count := func() int { mu.Lock(); defer mu.Unlock(); return len(got) }

	ln := listen()
	register(ln)
	h := start(t, Config{TopologyName: "wc", Container: 1, Socket: filepath.Join(dir, "m.sock"), Sinks: []string{SinkTManager}, StateManager: store.NewSession()})
	conn := publish(t, h.cfg.Socket, report(1, 1), report(2, 2))
	defer conn.Close()
	waitFor(t, "two reports at the topology manager", func() bool { return count() == 2 })

	// The topology manager dies and restarts elsewhere: the sink follows
	// the new location.
	ln.Close()
	mu.Lock()
	for _, c := range conns {
		c.Close()
	}
	mu.Unlock()
	ln2 := listen()
	defer ln2.Close()
	register(ln2)
	deadline := time.Now().Add(15 * time.Second)
	for count() < 3 {
		if time.Now().After(deadline) {
			t.Fatal("reports did not reach the restarted topology manager")
		}
		if _, err := conn.Write(mustFrame(t, report(3, 3))); err != nil {
			t.Fatal(err)
		}
		time.Sleep(50 * time.Millisecond) // pacing the retries, not waiting for a result
	}
}

func mustFrame(t *testing.T, m *egretpb.MetricsPublish) []byte {
	b, err := wire.AppendMessage(nil, m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestSinksFromConfig(t *testing.T) {
	for _, tc := range []struct {
		cfg  spi.Config
		want []string
		err  string
	}{
		{cfg: spi.Config{}, want: []string{"file", "tmanager"}},
		{cfg: spi.Config{KeySinks: "tmanager"}, want: []string{"tmanager"}},
		{cfg: spi.Config{KeySinks: " file , file,"}, want: []string{"file"}},
		{cfg: spi.Config{KeySinks: ""}, want: nil},
		{cfg: spi.Config{KeySinks: "file,prometheus,graphite"}, want: []string{"file", "prometheus", "graphite"}},
		{cfg: spi.Config{KeySinks: "file,statsd"}, want: []string{"file", "statsd"}}, // a plugin
		{cfg: spi.Config{KeySinks: "file,../statsd"}, err: `config key egret.metrics.sinks: metrics sink name "../statsd" is invalid: use a built-in sink (file, graphite, prometheus, tmanager) or the name of a plugin (letters, digits, '.', '_', '-')`},
	} {
		got, err := SinksFromConfig(tc.cfg)
		if tc.err != "" {
			if err == nil || err.Error() != tc.err {
				t.Errorf("%v: %v, want error %q", tc.cfg, err, tc.err)
			}
			continue
		}
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("%v = %v, %v; want %v", tc.cfg, got, err, tc.want)
		}
	}
}

// TestOnlySelectedSinksRun: a metrics manager feeds exactly the sinks it is
// given, and refuses one it cannot run.
func TestOnlySelectedSinksRun(t *testing.T) {
	log := zaptest.NewLogger(t)
	sm := memory.NewStore().NewSession()
	defer sm.Close()
	all := Config{FilePath: filepath.Join(t.TempDir(), "metrics.jsonl"), StateManager: sm, PrometheusAddr: "127.0.0.1:0", GraphiteAddr: "127.0.0.1:2003"}
	for _, tc := range []struct {
		sinks []string
		want  []string
		err   string
	}{
		{sinks: []string{SinkFile, SinkTManager}, want: []string{"file", "tmanager"}},
		{sinks: []string{SinkTManager}, want: []string{"tmanager"}},
		{sinks: []string{SinkFile}, want: []string{"file"}},
		{sinks: nil, want: nil},
		{sinks: []string{SinkPrometheus, SinkGraphite}, want: []string{"prometheus", "graphite"}},
		{sinks: []string{"statsd"}, err: `metrics sink "statsd" is not built in (file, graphite, prometheus, tmanager) and no plugin loader is configured`},
	} {
		cfg := all
		cfg.Sinks = tc.sinks
		sinks, err := newSinks(cfg, log)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%v: %v, want an error %q", tc.sinks, err, tc.err)
			}
			continue
		}
		var got []string
		for _, s := range sinks {
			got = append(got, s.name())
		}
		closeSinks(sinks)
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("%v: sinks %v, %v; want %v", tc.sinks, got, err, tc.want)
		}
	}
	if _, err := newSinks(Config{Sinks: []string{SinkFile}}, log); err == nil || !strings.Contains(err.Error(), "needs a file path") {
		t.Errorf("file sink without a path: %v", err)
	}
	if _, err := newSinks(Config{Sinks: []string{SinkTManager}}, log); err == nil || !strings.Contains(err.Error(), "needs a state manager") {
		t.Errorf("tmanager sink without a state manager: %v", err)
	}
}
