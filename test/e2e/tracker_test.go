package e2e

// Tests of `egret tracker` (issue 23): its REST API against a real local
// topology, checked against the OpenAPI document, and its web UI in a real
// headless Chromium (tracker_ui_test.go).

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/egret-stream/egret/tracker/trackertest"
)

func init() { packages["flakybolt"] = "./test/e2e/testdata/flakybolt" }

// trackerTimeout bounds every wait on the tracker (2 shared cores).
const trackerTimeout = 2 * time.Minute

// startTracker runs `egret tracker` over the cluster on a free port (with
// the extra flags) and returns its base URL; the test's cleanup stops it.
func startTracker(t *testing.T, c *cluster, extra ...string) string {
	t.Helper()
	args := []string{}
	for _, p := range c.props {
		args = append(args, "--config-property", p)
	}
	args = append(args, "tracker", "--cluster", c.name, "--addr", "127.0.0.1:0", "--sample-interval", "1s")
	args = append(args, extra...)
	cmd := exec.Command(binary(t, "egret"), args...)
	cmd.Env = append(append(os.Environ(), "EGRET_HOME="+c.home), c.env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		re := regexp.MustCompile(`tracker listening on (http://\S+)`)
		for sc.Scan() {
			if m := re.FindStringSubmatch(sc.Text()); m != nil {
				addr <- m[1]
			}
		}
		done <- cmd.Wait()
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("egret tracker did not exit cleanly on SIGTERM: %v\n%s", err, stderr.String())
			}
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			<-done
			t.Errorf("egret tracker did not stop within 30s of SIGTERM")
		}
	})
	select {
	case a := <-addr:
		return a
	case err := <-done:
		t.Fatalf("egret tracker exited: %v\n%s", err, stderr.String())
	case <-time.After(time.Minute):
		t.Fatalf("egret tracker did not say where it listens within a minute\n%s", stderr.String())
	}
	return ""
}

// trackerGet fetches a tracker path and returns the status and body.
func trackerGet(base, path string, q url.Values) (int, []byte, error) {
	u := base + path
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	resp, err := (&http.Client{Timeout: 20 * time.Second}).Get(u)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}

// checked fetches a path, checks the answer against the OpenAPI document
// and decodes it into v (when the status is 200).
func checked(t *testing.T, doc *trackertest.Doc, base, path string, q url.Values, v any) int {
	t.Helper()
	code, body, err := trackerGet(base, path, q)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	if err := doc.Check(path, code, body); err != nil {
		t.Fatalf("%v\n%s", err, body)
	}
	if code == http.StatusOK && v != nil {
		if err := json.Unmarshal(body, v); err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
	}
	return code
}

type trackerTopology struct {
	Cluster, Name, State, ID string
	Throughput               *float64
}

// waitTrackerRunning waits until the tracker lists the topology as
// running with a known throughput.
func waitTrackerRunning(t *testing.T, doc *trackertest.Doc, base, cluster, name string) {
	t.Helper()
	await(t, "the tracker to list "+name+" as running with its throughput", trackerTimeout, func() (bool, string) {
		var l struct{ Topologies []trackerTopology }
		if code := checked(t, doc, base, "/topologies", url.Values{"cluster": {cluster}}, &l); code != 200 {
			return false, fmt.Sprintf("status %d", code)
		}
		for _, tp := range l.Topologies {
			if tp.Name == name {
				return tp.State == "running" && tp.Throughput != nil && *tp.Throughput > 0, fmt.Sprintf("%+v", tp)
			}
		}
		return false, fmt.Sprintf("not listed in %+v", l.Topologies)
	})
}

// TestTrackerAPI runs word count and checks every endpoint of the tracker
// against its OpenAPI document, the metrics aggregation and the timeline,
// and the answers to bad parameters.
func TestTrackerAPI(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: runs a local topology and the tracker")
	}
	doc, err := trackertest.Load()
	if err != nil {
		t.Fatal(err)
	}
	c := newCluster(t, "local")
	c.mustEgret("submit", c.name, binary(t, "wordcount"), "--", "--rate", "200")
	base := startTracker(t, c)
	waitTrackerRunning(t, doc, base, c.name, "wordcount")
	q := url.Values{"cluster": {c.name}, "topology": {"wordcount"}}

	var clusters struct {
		Clusters []struct {
			Name    string
			Metrics struct {
				Topologies  int
				Throughput  float64
				ExecuteRate float64 `json:"execute_rate"`
				CPUCores    float64 `json:"cpu_cores"`
				RSSBytes    float64 `json:"rss_bytes"`
			}
		}
	}
	// The cluster aggregate sums the word count's latest sample.
	waitFor(t, "the cluster's aggregate throughput, execute rate, cpu and memory", time.Minute, func() bool {
		checked(t, doc, base, "/clusters", nil, &clusters)
		if len(clusters.Clusters) != 1 {
			return false
		}
		m := clusters.Clusters[0].Metrics
		return m.Topologies == 1 && m.Throughput > 0 && m.ExecuteRate > m.Throughput && m.CPUCores > 0 && m.RSSBytes > 0
	})
	if clusters.Clusters[0].Name != c.name {
		t.Errorf("/clusters: %+v", clusters)
	}

	var lp struct {
		Components []struct{ Name, Kind string }
		Edges      []struct{ From, To, Grouping string }
	}
	checked(t, doc, base, "/topologies/logicalplan", q, &lp)
	def, err := c.store().Topology(context.Background(), "wordcount")
	if err != nil {
		t.Fatal(err)
	}
	if len(lp.Components) != len(def.Components) {
		t.Errorf("logical plan has %d components, the definition %d", len(lp.Components), len(def.Components))
	}
	edges := 0
	for _, comp := range def.Components {
		edges += len(comp.Inputs)
	}
	if len(lp.Edges) != edges {
		t.Errorf("logical plan has %d edges, the definition %d inputs", len(lp.Edges), edges)
	}
	groupings := map[string]bool{}
	for _, e := range lp.Edges {
		groupings[e.Grouping] = true
	}
	if !groupings["fields"] {
		t.Errorf("no fields grouping among the edges %+v", lp.Edges)
	}

	var pk struct {
		Containers []struct {
			Instances []struct{ Task int }
		}
	}
	checked(t, doc, base, "/topologies/packingplan", q, &pk)
	tasks := 0
	for _, ct := range pk.Containers {
		tasks += len(ct.Instances)
	}

	var pp struct {
		State      string
		Containers []struct {
			Registered bool
			Instances  []struct {
				Task, Pid int
				Component string
			}
		}
	}
	await(t, "every instance in the physical plan to have a pid", trackerTimeout, func() (bool, string) {
		checked(t, doc, base, "/topologies/physicalplan", q, &pp)
		n, withPid := 0, 0
		for _, ct := range pp.Containers {
			for _, in := range ct.Instances {
				n++
				if in.Pid > 0 {
					withPid++
				}
			}
		}
		return pp.State == "running" && n == tasks && withPid == n, fmt.Sprintf("state %s, %d of %d instances with a pid", pp.State, withPid, n)
	})

	var es struct {
		ID                string
		SchedulerLocation *struct {
			JobLinks []string `json:"job_links"`
		} `json:"scheduler_location"`
	}
	checked(t, doc, base, "/topologies/executionstate", q, &es)
	if es.SchedulerLocation == nil || len(es.SchedulerLocation.JobLinks) == 0 {
		t.Errorf("execution state without scheduler job links: %+v", es)
	}

	// Metrics: task → component → topology sums add up.
	var m struct {
		Components map[string]struct {
			Metrics   map[string]float64
			Instances map[string]struct{ Metrics map[string]float64 }
		}
		TopologyMetrics map[string]float64 `json:"topology_metrics"`
	}
	checked(t, doc, base, "/topologies/metrics", q, &m)
	var total float64
	for name, comp := range m.Components {
		var sum float64
		for _, in := range comp.Instances {
			sum += in.Metrics["instance.emitted"]
		}
		if sum != comp.Metrics["instance.emitted"] {
			t.Errorf("component %s: instances emitted %v in all, the component %v", name, sum, comp.Metrics["instance.emitted"])
		}
		total += sum
	}
	if total != m.TopologyMetrics["instance.emitted"] || total <= 0 {
		t.Errorf("topology emitted %v, the components %v", m.TopologyMetrics["instance.emitted"], total)
	}
	qc := url.Values{"cluster": {c.name}, "topology": {"wordcount"}, "component": {def.Spouts()[0]}, "metricname": {"instance.emitted"}}
	var one struct {
		Components map[string]struct{ Metrics map[string]float64 }
	}
	checked(t, doc, base, "/topologies/metrics", qc, &one)
	if len(one.Components) != 1 || len(one.Components[def.Spouts()[0]].Metrics) != 1 {
		t.Errorf("metric instance.emitted of one component: %+v", one.Components)
	}

	// Timeline: the spout's emit rate is positive in the latest samples.
	var tl struct {
		Timestamps []float64
		Components map[string]map[string][]*float64
	}
	spout := def.Spouts()[0]
	await(t, "the timeline to show the spout's emit rate", trackerTimeout, func() (bool, string) {
		checked(t, doc, base, "/topologies/metrics/timeline", q, &tl)
		s := tl.Components[spout]["emit_rate"]
		if len(s) < 3 || s[len(s)-1] == nil {
			return false, fmt.Sprintf("%d samples", len(tl.Timestamps))
		}
		return *s[len(s)-1] > 0, fmt.Sprintf("%d samples, last emit rate %v", len(s), *s[len(s)-1])
	})
	// Every one of 15 samples a second apart (the instances report every
	// 10s) shows the spout's known rate, 200 sentences/s per task, within
	// 5%: rates come from the reports' own times, never 0 or twice.
	sc, _ := def.Component(spout)
	wantRate := 200.0 * float64(sc.Parallelism)
	await(t, "15 samples of the spout's emit rate", trackerTimeout, func() (bool, string) {
		checked(t, doc, base, "/topologies/metrics/timeline", q, &tl)
		return len(tl.Components[spout]["emit_rate"]) >= 20, fmt.Sprintf("%d samples", len(tl.Timestamps))
	})
	s := tl.Components[spout]["emit_rate"]
	for i, v := range s[len(s)-15:] {
		if v == nil || math.Abs(*v-wantRate) > 0.05*wantRate {
			t.Errorf("emit rate sample %d of the last 15: %v, want %v within 5%% (all: %s)", i, fmtPoint(v), wantRate, fmtPoints(s))
		}
	}
	checked(t, doc, base, "/topologies/metrics/timeline", url.Values{"cluster": {c.name}, "topology": {"wordcount"},
		"instance": {fmt.Sprint(pp.Containers[0].Instances[0].Task)}, "resolution": {"coarse"}}, nil)

	checked(t, doc, base, "/topologies/exceptions", q, nil)
	checked(t, doc, base, "/topologies/exceptionsummary", q, nil)

	// The log files of container 1, through its shell: the listing names
	// the instance logs, and the tail of one holds its lines.
	fq := url.Values{"cluster": {c.name}, "topology": {"wordcount"}, "container": {"1"}}
	var stats struct {
		Files []struct {
			Name string
			Size int64
		}
	}
	var logFile string
	await(t, "container 1's instance logs in /topologies/containerfilestats", trackerTimeout, func() (bool, string) {
		if code := checked(t, doc, base, "/topologies/containerfilestats", fq, &stats); code != 200 {
			return false, fmt.Sprintf("status %d", code)
		}
		for _, f := range stats.Files {
			if strings.HasPrefix(f.Name, "instance-") && f.Size > 0 {
				logFile = f.Name
				return true, ""
			}
		}
		return false, fmt.Sprintf("files %+v", stats.Files)
	})
	var data struct {
		Path         string
		Offset, Size int64
		Length       int
		Data         string
	}
	dq := url.Values{"cluster": {c.name}, "topology": {"wordcount"}, "container": {"1"}, "path": {logFile}, "offset": {"-200"}, "length": {"100"}}
	if code := checked(t, doc, base, "/topologies/containerfiledata", dq, &data); code != 200 || data.Path != logFile || data.Length == 0 || data.Length > 100 || data.Length != len(data.Data) || data.Offset+200 < data.Size {
		t.Errorf("containerfiledata of %s: %d %+v", logFile, code, data)
	}

	// Bad parameters and unknown names.
	for _, tc := range []struct {
		path   string
		q      url.Values
		status int
	}{
		{"/topologies/logicalplan", url.Values{"cluster": {c.name}}, 400},
		{"/topologies/logicalplan", url.Values{"cluster": {c.name}, "topology": {"a/b"}}, 400},
		{"/topologies/metrics", url.Values{"cluster": {c.name}, "topology": {"wordcount"}, "instance": {"-1"}}, 400},
		{"/topologies/metrics", url.Values{"cluster": {c.name}, "topology": {"wordcount"}, "extra": {"1"}}, 400},
		{"/topologies/physicalplan", url.Values{"cluster": {c.name}, "topology": {"nosuch"}}, 404},
		{"/topologies/physicalplan", url.Values{"cluster": {"nosuch"}, "topology": {"wordcount"}}, 404},
		{"/topologies/exceptions", url.Values{"cluster": {c.name}, "topology": {"wordcount"}, "component": {"nosuch"}}, 404},
		{"/topologies/metrics", url.Values{"cluster": {c.name}, "topology": {"wordcount"}, "instance": {"9999"}}, 404},
		{"/topologies/containerfiledata", url.Values{"cluster": {c.name}, "topology": {"wordcount"}, "container": {"1"}, "path": {"../../../../etc/passwd"}}, 400},
		{"/topologies/containerfiledata", url.Values{"cluster": {c.name}, "topology": {"wordcount"}, "container": {"1"}, "path": {"%2e%2e"}}, 400},
		{"/topologies/containerfiledata", url.Values{"cluster": {c.name}, "topology": {"wordcount"}, "container": {"1"}, "path": {"no-such.log"}}, 404},
		{"/topologies/containerfiledata", url.Values{"cluster": {c.name}, "topology": {"wordcount"}, "container": {"1"}, "path": {"x.log"}, "length": {"99999999"}}, 400},
		{"/topologies/containerfilestats", url.Values{"cluster": {c.name}, "topology": {"wordcount"}, "container": {"-1"}}, 400},
		{"/topologies/containerfilestats", url.Values{"cluster": {c.name}, "topology": {"wordcount"}, "container": {"99"}}, 503},
	} {
		if code := checked(t, doc, base, tc.path, tc.q, nil); code != tc.status {
			t.Errorf("GET %s?%s: %d, want %d", tc.path, tc.q.Encode(), code, tc.status)
		}
	}

	// The tracker is read-only and the topology stops without it noticing.
	c.mustEgret("kill", c.name, "wordcount")
	await(t, "the tracker to forget the killed topology", trackerTimeout, func() (bool, string) {
		code := checked(t, doc, base, "/topologies/logicalplan", q, nil)
		return code == 404, fmt.Sprintf("status %d", code)
	})
	c.waitGone(t)
}

func fmtPoint(v *float64) string {
	if v == nil {
		return "unknown"
	}
	return fmt.Sprintf("%.1f", *v)
}

func fmtPoints(s []*float64) string {
	out := make([]string, len(s))
	for i, v := range s {
		out[i] = fmtPoint(v)
	}
	return strings.Join(out, " ")
}
