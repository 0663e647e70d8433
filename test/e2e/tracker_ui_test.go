package e2e

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/egret-stream/egret/tracker/trackertest"
)

// chromiumPath is Debian's chromium binary (the /usr/bin/chromium wrapper
// only adds flags).
const chromiumPath = "/usr/lib/chromium/chromium"

// browser starts a headless Chromium for the test and returns a tab's
// context; everything the browser writes stays in temporary directories.
// The test is skipped when chromium is not installed, unless
// EGRET_REQUIRE_CHROMIUM=1 makes that a failure.
func browser(t *testing.T) context.Context {
	t.Helper()
	if _, err := os.Stat(chromiumPath); err != nil {
		if os.Getenv("EGRET_REQUIRE_CHROMIUM") == "1" {
			t.Fatalf("chromium is not installed (%s) and EGRET_REQUIRE_CHROMIUM=1: apt-get install -y chromium", chromiumPath)
		}
		t.Skipf("chromium is not installed (%s): apt-get install -y chromium, or set EGRET_REQUIRE_CHROMIUM=1 to fail instead", chromiumPath)
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromiumPath), chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.WindowSize(1400, 1000), // the console must be usable at 1,400 px
		chromedp.UserDataDir(t.TempDir()),
		chromedp.Env("TMPDIR="+t.TempDir(), "XDG_CONFIG_HOME="+t.TempDir(), "HOME="+t.TempDir()))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelTab := chromedp.NewContext(actx)
	t.Cleanup(func() {
		cancelTab()
		cancelAlloc()
	})
	return ctx
}

// artifactDir is where screenshots go: $EGRET_TEST_ARTIFACTS, else a
// temporary directory of the test.
func artifactDir(t *testing.T) string {
	if d := os.Getenv("EGRET_TEST_ARTIFACTS"); d != "" {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		return d
	}
	return t.TempDir()
}

func screenshot(t *testing.T, ctx context.Context, dir, name string) {
	t.Helper()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot %s", p)
}

// evalJS evaluates a JavaScript expression in the tab.
func evalJS[T any](ctx context.Context, expr string) (T, error) {
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	return chromedp.Run(ctx, chromedp.Evaluate[T](expr))
}

// awaitJS waits until the expression (returning {ok, status}) is ok.
func awaitJS(t *testing.T, ctx context.Context, what, expr string) {
	t.Helper()
	awaitJSValue[struct{}](t, ctx, what, expr)
}

// awaitJSValue waits until the expression (returning {ok, status, value})
// is ok and returns its value: what the page showed when it was, read in
// the same evaluation (the page re-renders between two).
func awaitJSValue[T any](t *testing.T, ctx context.Context, what, expr string) T {
	t.Helper()
	type result struct {
		OK     bool   `json:"ok"`
		Status string `json:"status"`
		Value  T      `json:"value"`
	}
	var v T
	await(t, what, trackerTimeout, func() (bool, string) {
		r, err := evalJS[result](ctx, expr)
		if err != nil {
			return false, err.Error()
		}
		v = r.Value
		return r.OK, r.Status
	})
	return v
}

// TestTrackerUI opens the tracker's UI on a running flakybolt topology in
// headless Chromium: the topology list, the DAG with every component and
// grouping, a live chart whose numbers rise, a bolt's reported errors, and
// an instance killed with SIGKILL shown as restarted with a new pid.
func TestTrackerUI(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: runs a local topology, the tracker and a browser")
	}
	ctx := browser(t)
	doc, err := trackertest.Load()
	if err != nil {
		t.Fatal(err)
	}
	shots := artifactDir(t)
	c := newCluster(t, "local")
	c.mustEgret("submit", c.name, binary(t, "flakybolt"), "--", "--rate", "200")
	base := startTracker(t, c)
	waitTrackerRunning(t, doc, base, c.name, "flakybolt")

	// The list.
	if err := chromedp.Do(ctx, chromedp.Navigate(base+"/")); err != nil {
		t.Fatal(err)
	}
	awaitJS(t, ctx, "the list to show flakybolt running with its throughput", `(() => {
		const r = document.querySelector('tr[data-topology="flakybolt"]');
		if (!r) return {ok: false, status: document.getElementById("main").innerText.slice(0, 200)};
		const tp = r.querySelector(".throughput").textContent;
		return {ok: r.innerText.includes("running") && parseFloat(tp) > 0, status: r.innerText};
	})()`)
	screenshot(t, ctx, shots, "tracker-topologies.png")

	// The topology page: the DAG shows every component and edge.
	if err := chromedp.Do(ctx, chromedp.Navigate(base+"/#/topology/"+c.name+"/flakybolt")); err != nil {
		t.Fatal(err)
	}
	awaitJS(t, ctx, "the DAG to show every component and edge", `(() => {
		const nodes = [...document.querySelectorAll("#dag g.node")].map(n => n.dataset.component).sort().join(",");
		const edges = [...document.querySelectorAll("#dag g.edge")].map(e => e.dataset.from + ">" + e.dataset.to + ":" + e.dataset.grouping).sort().join(",");
		return {ok: nodes === "flaky,numbers,sink" && edges === "flaky>sink:fields,numbers>flaky:shuffle", status: nodes + " | " + edges};
	})()`)

	// A chart's numbers rise: the emitted-per-second chart gets more
	// points and shows a positive rate for the spout.
	chart := `document.querySelector('.chart[data-series="emit_rate"]')`
	points := awaitJSValue[int](t, ctx, "the emit chart", fmt.Sprintf(`(() => {
		const c = %s;
		return c ? {ok: true, status: "", value: parseInt(c.dataset.points || "0")} : {ok: false, status: "no emit chart"};
	})()`, chart))
	awaitJS(t, ctx, "the emit chart to get new points and a positive spout rate", fmt.Sprintf(`(() => {
		const c = %s;
		if (!c) return {ok: false, status: "no emit chart"};
		const v = c.querySelector('.latest[data-component="numbers"]');
		const n = parseInt(c.dataset.points || "0");
		return {ok: n >= %d + 3 && v && parseFloat(v.dataset.value) > 0, status: n + " points, spout " + (v ? v.dataset.value : "none")};
	})()`, chart, points))

	// The bolt's reported errors appear with a count.
	awaitJS(t, ctx, "the flaky bolt's errors to appear", `(() => {
		const r = document.querySelector('tr.exception[data-component="flaky"]');
		if (!r) return {ok: false, status: document.getElementById("exceptions").innerText.slice(0, 200)};
		return {ok: r.innerText.includes("rejects every 100th") && parseInt(r.dataset.count) > 0, status: r.innerText};
	})()`)
	screenshot(t, ctx, shots, "tracker-topology.png")

	// kill -9 of a flaky instance: the physical plan shows it restarted
	// with a new pid.
	type inst struct {
		Task int `json:"task"`
		Pid  int `json:"pid"`
	}
	victim := awaitJSValue[inst](t, ctx, "the physical plan to show the flaky instances' pids", `(() => {
		const r = [...document.querySelectorAll('tr.instance[data-component="flaky"]')];
		return {ok: r.length === 2 && r.every(x => parseInt(x.dataset.pid) > 0), status: r.map(x => x.dataset.task + ":" + x.dataset.pid).join(" "),
			value: r.length ? {task: parseInt(r[0].dataset.task), pid: parseInt(r[0].dataset.pid)} : null};
	})()`)
	p, ok := procOf(victim.Pid)
	if !ok {
		t.Fatalf("the UI's pid %d of task %d is not a running process", victim.Pid, victim.Task)
	}
	kill9(t, fmt.Sprintf("flaky instance (task %d)", victim.Task), p)
	awaitJS(t, ctx, "the physical plan to show the killed instance restarted", fmt.Sprintf(`(() => {
		const r = document.getElementById("inst-%d");
		if (!r) return {ok: false, status: "no row"};
		return {ok: parseInt(r.dataset.restarts) >= 1 && parseInt(r.dataset.pid) > 0 && parseInt(r.dataset.pid) !== %d,
			status: "pid " + r.dataset.pid + ", restarts " + r.dataset.restarts};
	})()`, victim.Task, victim.Pid))
	screenshot(t, ctx, shots, "tracker-restarted.png")

	// The instance's log link returns the tail of its log through the
	// container's shell.
	awaitJS(t, ctx, "the log link of the restarted instance to return its log", fmt.Sprintf(`(() => {
		const a = document.querySelector("#inst-%d a.log-link");
		if (!a) return {ok: false, status: "no log link"};
		const x = new XMLHttpRequest();
		x.open("GET", a.href, false);
		x.send();
		if (x.status !== 200) return {ok: false, status: x.status + " " + x.responseText.slice(0, 200)};
		const d = JSON.parse(x.responseText);
		return {ok: d.length > 0 && d.data.length > 0, status: d.path + ": " + d.length + " bytes"};
	})()`, victim.Task))

	// The API agrees with the page.
	var pp struct {
		Containers []struct {
			Instances []struct{ Task, Pid, Restarts int }
		}
	}
	checked(t, doc, base, "/topologies/physicalplan", url.Values{"cluster": {c.name}, "topology": {"flakybolt"}}, &pp)
	for _, ct := range pp.Containers {
		for _, in := range ct.Instances {
			if in.Task == victim.Task && (in.Restarts < 1 || in.Pid == victim.Pid) {
				t.Errorf("physical plan of task %d: %+v", victim.Task, in)
			}
		}
	}
	c.mustEgret("kill", c.name, "flakybolt")
	c.waitGone(t)
}
