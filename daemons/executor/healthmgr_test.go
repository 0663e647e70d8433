package executor

import (
	"context"
	"path/filepath"
	"slices"
	"testing"

	"github.com/egret-stream/egret/core/state"
	"github.com/egret-stream/egret/core/topology"
)

// TestContainerZeroHealthMgr: container 0 runs the health manager when the
// topology enables it (topology.healthmgr.enabled) and not otherwise.
func TestContainerZeroHealthMgr(t *testing.T) {
	t.Parallel()
	for _, enabled := range []bool{true, false} {
		v := newEnv(t)
		v.setPlan(testPlan(map[int][]string{1: {"word:1"}}))
		cfg := map[string]string{}
		if enabled {
			cfg[topology.KeyHealthMgrEnabled] = "true"
		}
		top := &topology.Topology{Name: testTopology, ID: "wc-1", Config: cfg, Components: []topology.Component{
			{Name: "word", Kind: topology.Spout, Parallelism: 1, Outputs: []topology.Stream{{ID: topology.DefaultStream, Fields: []string{"w"}}}},
		}}
		b, err := topology.Marshal(top)
		if err != nil {
			t.Fatal(err)
		}
		if err := v.sm.Create(context.Background(), state.Path(state.TopologiesDir, testTopology), b, false); err != nil {
			t.Fatal(err)
		}
		ready := make(chan struct{})
		c := v.config(0)
		c.Ready = func() { close(ready) }
		e, cancel, errc := v.run(c)
		v.waitReady(e, "tmanager", "tmanager")
		<-ready
		want := []string{"metricsmgr", "shell", "tmanager"}
		if enabled {
			hm := v.waitReady(e, "healthmgr", "healthmgr")
			w := e.Paths().WorkDir
			wantArgs := []string{"healthmgr", "--topology", "wc", "--topology-id", "wc-1", "--metrics-socket", filepath.Join(w, "metricsmgr.sock"),
				"--config", filepath.Join(w, "package", "cluster.json")}
			if got := v.argv("healthmgr", hm); !slices.Equal(got, wantArgs) {
				t.Errorf("healthmgr args\n got %q\nwant %q", got, wantArgs)
			}
			want = []string{"healthmgr", "metricsmgr", "shell", "tmanager"}
		}
		if names := statusNames(e); !slices.Equal(names, want) {
			t.Errorf("enabled %v: container 0 runs %v, want %v", enabled, names, want)
		}
		cancel()
		if err := waitErr(t, errc); err != nil {
			t.Fatal(err)
		}
	}
}
