package tracker_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/egret-stream/egret/conf"
	"github.com/egret-stream/egret/core/plan"
	"github.com/egret-stream/egret/core/spi"
	"github.com/egret-stream/egret/core/state"
	"github.com/egret-stream/egret/core/topology"
	"github.com/egret-stream/egret/proto/egretpb"
	"github.com/egret-stream/egret/statemgr/memory"
	"github.com/egret-stream/egret/tracker"
	"github.com/egret-stream/egret/tracker/trackertest"
)

// backends serves one in-memory state manager and no scheduler.
type backends struct{ store *memory.Store }

func (b backends) StateManager(context.Context, spi.Config) (spi.StateManager, error) {
	return b.store.NewSession(), nil
}
func (backends) Uploader(context.Context, spi.Config) (spi.Uploader, error) {
	return nil, errors.New("no uploader in this test")
}
func (backends) Packing(context.Context, spi.Config) (spi.Packing, error) {
	return nil, errors.New("no packing in this test")
}
func (backends) Scheduler(context.Context, spi.Config) (spi.Scheduler, error) {
	return nil, errors.New("no scheduler in this test")
}

func newTracker(t *testing.T) (*httptest.Server, *memory.Store) {
	t.Helper()
	t.Setenv("EGRET_HOME", t.TempDir())
	c, err := conf.Load(conf.LoadOptions{Cluster: "local", ConfigPath: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	store := memory.NewStore()
	tr, err := tracker.New(tracker.Options{Clusters: []*conf.Cluster{c}, Backends: backends{store}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tr.Close)
	srv := httptest.NewServer(tr.Handler())
	t.Cleanup(srv.Close)
	// One submitted topology whose containers have not started.
	tp := &topology.Topology{Name: "wc", ID: "wc-1", Components: []topology.Component{
		{Name: "words", Kind: topology.Spout, Parallelism: 1, Outputs: []topology.Stream{{ID: topology.DefaultStream, Fields: []string{"word"}}}},
		{Name: "count", Kind: topology.Bolt, Parallelism: 2, Inputs: []topology.Input{{Component: "words", Stream: topology.DefaultStream, Grouping: topology.Fields, Fields: []string{"word"}}}},
	}}
	pp := &plan.PackingPlan{TopologyID: "wc-1", Containers: []plan.Container{{ID: 1, Instances: []plan.Instance{
		{Component: "words", TaskID: 1}, {Component: "count", TaskID: 2}, {Component: "count", TaskID: 3, Index: 1}}}}}
	es := &egretpb.ExecutionState{TopologyName: "wc", TopologyId: "wc-1", Cluster: "local", Role: "alice", Environ: "default"}
	if err := state.New(store.NewSession()).Submit(context.Background(), state.Submission{Topology: tp, Plan: pp, ExecutionState: es}); err != nil {
		t.Fatal(err)
	}
	return srv, store
}

func get(t *testing.T, url string) (int, []byte) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, b
}

func TestOpenAPIDocumentIsValid(t *testing.T) {
	doc, err := trackertest.Load()
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"/clusters", "/topologies", "/topologies/logicalplan", "/topologies/packingplan", "/topologies/physicalplan",
		"/topologies/executionstate", "/topologies/metrics", "/topologies/metrics/timeline", "/topologies/exceptions", "/topologies/exceptionsummary", "/topologies/healthmanager"}
	have := strings.Join(doc.Paths(), " ")
	for _, p := range want {
		if !strings.Contains(have+" ", p+" ") {
			t.Errorf("openapi.yaml does not document %s", p)
		}
	}
}

// TestEndpointsWithoutRunningTopology: the state-only endpoints answer
// from the state manager, the live ones say 503 in one line, bad
// parameters are 400 and unknown names 404, each as documented.
func TestEndpointsWithoutRunningTopology(t *testing.T) {
	srv, _ := newTracker(t)
	doc, err := trackertest.Load()
	if err != nil {
		t.Fatal(err)
	}
	q := "?cluster=local&topology=wc"
	for _, tc := range []struct {
		path, query string
		status      int
		contains    string
	}{
		{"/clusters", "", 200, `"name":"local"`},
		{"/topologies", "", 200, `"name":"wc"`},
		{"/topologies", "?environ=other", 200, `"topologies":[]`},
		{"/topologies/logicalplan", q, 200, `"grouping":"fields"`},
		{"/topologies/logicalplan", q + "&environ=default&role=alice", 200, `"from":"words"`},
		{"/topologies/packingplan", q, 200, `"component":"count"`},
		{"/topologies/executionstate", q, 200, `"role":"alice"`},
		{"/topologies/healthmanager", q, 200, `"decisions":[],"enabled":false`},
		{"/topologies/physicalplan", q, 404, "no physical plan yet"},
		{"/topologies/metrics", q, 503, "no topology manager running"},
		{"/topologies/exceptions", q, 503, "no topology manager running"},
		{"/topologies/metrics/timeline", q, 200, `"timestamps":[]`},
		{"/topologies/metrics/timeline", q + "&component=count&metricname=emit_rate", 200, `"count":{"emit_rate":[]}`},
		// bad parameters
		{"/topologies/logicalplan", "?cluster=local", 400, "topology is required"},
		{"/topologies/logicalplan", "?topology=wc", 400, "cluster is required"},
		{"/topologies/logicalplan", "?cluster=local&topology=../etc", 400, "topology name"},
		{"/topologies/logicalplan", "?cluster=lo%2Fcal&topology=wc", 400, "cluster name"},
		{"/topologies/logicalplan", q + "&bogus=1", 400, "unknown query parameter"},
		{"/topologies/logicalplan", q + "&topology=wc", 400, "given 2 times"},
		{"/topologies/metrics", q + "&instance=x", 400, "task id"},
		{"/topologies/metrics/timeline", q + "&metricname=nope", 400, "no series"},
		{"/topologies/metrics/timeline", q + "&resolution=daily", 400, "fine or coarse"},
		{"/clusters", "?cluster=local", 400, "no query parameters"},
		// unknown names
		{"/topologies/logicalplan", "?cluster=nowhere&topology=wc", 404, "unknown cluster"},
		{"/topologies/logicalplan", "?cluster=local&topology=nothere", 404, "not found"},
		{"/topologies/logicalplan", q + "&environ=prod", 404, "environ"},
		{"/topologies/metrics", q + "&component=nope", 404, "no component"},
		{"/topologies/metrics", q + "&instance=99", 404, "no instance"},
		{"/topologies/exceptions", q + "&instance=1&component=count", 404, "is of component"},
	} {
		code, body := get(t, srv.URL+tc.path+tc.query)
		if code != tc.status || !strings.Contains(string(body), tc.contains) {
			t.Errorf("GET %s%s: %d %s; want %d with %q", tc.path, tc.query, code, body, tc.status, tc.contains)
			continue
		}
		if strings.Count(strings.TrimSpace(string(body)), "\n") != 0 {
			t.Errorf("GET %s%s: answer is not one line: %s", tc.path, tc.query, body)
		}
		if err := doc.Check(tc.path, code, body); err != nil {
			t.Error(err)
		}
	}
	resp, err := http.Post(srv.URL+"/topologies", "text/plain", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST /topologies: %s, want 405", resp.Status)
	}
	for _, p := range []string{"/", "/ui/app.js", "/ui/style.css", "/openapi.yaml"} {
		if code, body := get(t, srv.URL+p); code != 200 || len(body) == 0 {
			t.Errorf("GET %s: %d (%d bytes)", p, code, len(body))
		}
	}
	if code, _ := get(t, srv.URL+"/nothing"); code != 404 {
		t.Errorf("GET /nothing: %d, want 404", code)
	}
}

// zkDown serves the memory state manager for localfs clusters and fails
// for ZooKeeper ones.
type zkDown struct{ backends }

func (b zkDown) StateManager(ctx context.Context, cfg spi.Config) (spi.StateManager, error) {
	if cfg.String("egret.statemgr", "") == "zookeeper" {
		return nil, errors.New("zookeeper: connection refused")
	}
	return b.backends.StateManager(ctx, cfg)
}

// TestOneClusterDownDoesNotHideOthers: /topologies lists the reachable
// clusters and names the one that cannot be read; asked for that cluster
// alone, it is a 503.
func TestOneClusterDownDoesNotHideOthers(t *testing.T) {
	t.Setenv("EGRET_HOME", t.TempDir())
	var clusters []*conf.Cluster
	for _, n := range []string{"local", "localzk"} {
		c, err := conf.Load(conf.LoadOptions{Cluster: n, ConfigPath: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		clusters = append(clusters, c)
	}
	tr, err := tracker.New(tracker.Options{Clusters: clusters, Backends: zkDown{backends{memory.NewStore()}}})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	srv := httptest.NewServer(tr.Handler())
	defer srv.Close()
	doc, err := trackertest.Load()
	if err != nil {
		t.Fatal(err)
	}
	code, body := get(t, srv.URL+"/topologies")
	if code != 200 || !strings.Contains(string(body), `"problems":[{"cluster":"localzk","error":`) {
		t.Errorf("GET /topologies: %d %s", code, body)
	}
	if err := doc.Check("/topologies", code, body); err != nil {
		t.Error(err)
	}
	code, body = get(t, srv.URL+"/topologies?cluster=localzk")
	if code != 503 || !strings.Contains(string(body), "connection refused") {
		t.Errorf("GET /topologies?cluster=localzk: %d %s", code, body)
	}
	if err := doc.Check("/topologies", code, body); err != nil {
		t.Error(err)
	}
}
