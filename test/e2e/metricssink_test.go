package e2e

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protojson"

	"github.com/egret-stream/egret/proto/egretpb"
)

// sinkReports reads the reports the jsonl sink plugin wrote in one
// container's working directory.
func sinkReports(path string) []*egretpb.MetricsPublish {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	var out []*egretpb.MetricsPublish
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		m := &egretpb.MetricsPublish{}
		if protojson.Unmarshal(sc.Bytes(), m) == nil {
			out = append(out, m)
		}
	}
	return out
}

// sinkSummary returns the largest instance.executed of component and the
// largest plugin start count the metrics manager reported.
func sinkSummary(reports []*egretpb.MetricsPublish, component string) (executed, starts float64) {
	for _, m := range reports {
		for _, x := range m.GetMetrics() {
			switch {
			case m.GetSource() == "instance" && m.GetComponent() == component && x.GetName() == "instance.executed":
				executed = max(executed, x.GetValue())
			case m.GetSource() == "metricsmgr" && x.GetName() == "metricsmgr.sink.jsonl.starts":
				starts = max(starts, x.GetValue())
			}
		}
	}
	return executed, starts
}

// TestMetricsSinkPlugin: an external metrics sink installed as a plugin
// binary is validated at submit, started by every container's metrics
// manager, fed the topology's reports, started again when it is killed,
// and gone with the topology.
func TestMetricsSinkPlugin(t *testing.T) {
	pluginDir, err := os.MkdirTemp("", "egret-e2e-plugins-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(pluginDir) })

	// A sink that is not installed is refused before anything is
	// submitted.
	c := newCluster(t, "local", "egret.plugin.directory="+pluginDir, "egret.metrics.sinks=file,tmanager,jsonl",
		"egret.metrics.jsonl.path=plugin-metrics.jsonl")
	_, stderr, code := c.egret("submit", c.name, binary(t, "wordcount"), "--", "--containers", "2")
	if code != 2 || !strings.Contains(stderr, "egret-metricssink-jsonl") {
		t.Fatalf("submit with a sink plugin that is not installed: exit %d, %q; want 2 naming the binary", code, stderr)
	}
	bin := filepath.Join(pluginDir, "egret-metricssink-jsonl")
	b, err := os.ReadFile(binary(t, "egret-metricssink-jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, b, 0o755); err != nil {
		t.Fatal(err)
	}
	if out := c.mustEgret("list", c.name); strings.Contains(out, "wordcount") {
		t.Fatalf("a refused submit left a topology:\n%s", out)
	}
	c.mustEgret("submit", c.name, binary(t, "wordcount"), "--", "--containers", "2")
	file := func(container int) string {
		return filepath.Join(c.workDir("wordcount"), fmt.Sprintf("container-%d", container), "plugin-metrics.jsonl")
	}
	// The count bolts run in containers 1 and 2; container 0's metrics
	// manager reports itself.
	var first float64
	waitFor(t, "the plugin in every container to receive reports", 2*time.Minute, func() bool {
		_, s0 := sinkSummary(sinkReports(file(0)), "count")
		e1, s1 := sinkSummary(sinkReports(file(1)), "count")
		e2, s2 := sinkSummary(sinkReports(file(2)), "count")
		first = e1 + e2
		return s0 >= 1 && s1 >= 1 && s2 >= 1 && e1+e2 > 0
	})
	waitFor(t, "executed tuples to rise in the plugin's reports", time.Minute, func() bool {
		e1, _ := sinkSummary(sinkReports(file(1)), "count")
		e2, _ := sinkSummary(sinkReports(file(2)), "count")
		return e1+e2 > first
	})

	// Kill the plugin process of every container: each is started again.
	plugins := c.subprocesses(bin)
	if len(plugins) != 3 {
		t.Fatalf("%d sink plugin processes, want one per container (3)", len(plugins))
	}
	for _, pid := range plugins {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	waitFor(t, "every metrics manager to start its plugin again and report through it", 2*time.Minute, func() bool {
		for i := range 3 {
			if _, s := sinkSummary(sinkReports(file(i)), "count"); s < 2 {
				return false
			}
		}
		return true
	})

	c.mustEgret("kill", c.name, "wordcount")
	c.waitGone(t)
}
