package e2e

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/egret-stream/egret/tracker/trackertest"
)

// uiTimeout bounds one UI step (a chromedp action).
const uiTimeout = 30 * time.Second

func ui(t *testing.T, ctx context.Context, what string, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, uiTimeout)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// TestConsoleUI drives every page and action of the console in headless
// Chromium at 1,400 px on a running flakybolt topology, with a tracker
// started with an operator token: the landing page's cluster aggregate
// and health, the topology's health, facts, the DAG coloured by
// busy-ness, the components and containers (CPU, memory), a component's
// per-task table with latency percentiles, the exceptions with their full
// text, an instance's log as text with search and paging, and the
// actions (deactivate, activate, log level, rescale, kill) each through
// its confirmation, checked against the tracker's API and the cluster.
// Screenshots of every page go to $EGRET_TEST_ARTIFACTS.
func TestConsoleUI(t *testing.T) {
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
	tokenFile := filepath.Join(t.TempDir(), "token")
	const token = "console-test-token-0123456789"
	if err := os.WriteFile(tokenFile, []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	base := startTracker(t, c, "--operator-token-file", tokenFile)
	waitTrackerRunning(t, doc, base, c.name, "flakybolt")
	q := url.Values{"cluster": {c.name}, "topology": {"flakybolt"}}
	topo := base + "/#/topology/" + c.name + "/flakybolt"

	// Landing: the cluster's aggregate and the topology's health. (The
	// first action starts the browser on the test's context: one under a
	// timeout would stop the browser with it.)
	if err := chromedp.Do(ctx, chromedp.Navigate(base+"/")); err != nil {
		t.Fatal(err)
	}
	awaitJS(t, ctx, "the cluster aggregate (cpu, memory, throughput) and the topology's health", `(() => {
		const tile = document.querySelector(".tile.cluster");
		const row = document.querySelector('tr[data-topology="flakybolt"]');
		if (!tile || !row) return {ok: false, status: document.getElementById("main").innerText.slice(0, 200)};
		const h = row.querySelector(".health");
		const cpu = parseFloat(tile.querySelector(".agg-cpu").textContent), tp = parseFloat(tile.querySelector(".agg-throughput").textContent);
		return {ok: cpu > 0 && tp > 0 && !!h && tile.querySelector(".agg-memory").textContent.includes("iB") && document.getElementById("mode").textContent.includes("enabled"),
			status: tile.innerText.replace(/\n/g, " ") + " | health " + (h ? h.dataset.level : "none")};
	})()`)
	screenshot(t, ctx, shots, "console-landing.png")

	// The topology: health, facts, coloured DAG, components, containers.
	ui(t, ctx, "open the topology", chromedp.Navigate(topo))
	awaitJS(t, ctx, "health, facts, the DAG coloured by busy-ness, components and containers with CPU and memory", `(() => {
		const h = document.querySelector("#health .health");
		const nodes = [...document.querySelectorAll("#dag g.node")];
		const comps = [...document.querySelectorAll("#component-table tr.component")];
		const conts = [...document.querySelectorAll("#container-table tr.container")];
		const flaky = document.querySelector('#dag g.node[data-component="flaky"]');
		const ok = !!h && nodes.length === 3 && flaky && flaky.dataset.busy !== undefined && flaky.dataset.busy !== "null" &&
			comps.length === 3 && conts.length >= 2 && conts.some(r => parseFloat(r.dataset.cpu) > 0) && conts.every(r => parseFloat(r.dataset.rss) > 0) &&
			document.querySelector('[data-fact="delivery"]') && document.querySelector('[data-fact="uptime"]').innerText.match(/\d+s|\d+m/);
		return {ok: !!ok, status: (h ? h.dataset.level : "no health") + " | busy " + (flaky ? flaky.dataset.busy : "-") + " | " + comps.length + " components, " + conts.map(r => r.dataset.cpu + "/" + r.dataset.rss).join(" ")};
	})()`)
	// flaky reports an error every 100th tuple: not healthy.
	awaitJS(t, ctx, "the health to name flaky's exceptions", `(() => {
		const h = document.querySelector("#health .health");
		const reasons = document.getElementById("health-reasons").innerText;
		return {ok: h && h.dataset.level !== "healthy" && /exception/.test(reasons), status: (h ? h.dataset.level : "none") + ": " + reasons};
	})()`)
	screenshot(t, ctx, shots, "console-topology.png")

	// A component's page: click its node in the DAG.
	ui(t, ctx, "click flaky in the DAG", chromedp.Click(chromedp.CSS(`#dag g.node[data-component="flaky"]`)))
	awaitJS(t, ctx, "flaky's per-task table with counts and latency percentiles", `(() => {
		const rows = [...document.querySelectorAll("#task-table tr.task")];
		return {ok: location.hash.startsWith("#/component/") && rows.length === 2 && rows.every(r => parseFloat(r.dataset.executed) > 0 && parseFloat(r.dataset.p99) > 0 && parseFloat(r.dataset.rss) > 0),
			status: location.hash + " " + rows.map(r => r.dataset.task + ":" + r.dataset.executed + "/p99 " + r.dataset.p99).join(" ")};
	})()`)
	awaitJS(t, ctx, "flaky's per-task charts", `(() => {
		const c = document.querySelector('.chart[data-series="execute_rate"]');
		const l = c ? c.querySelectorAll(".latest") : [];
		return {ok: l.length === 2, status: (c ? c.innerText : "no chart").replace(/\n/g, " ")};
	})()`)
	screenshot(t, ctx, shots, "console-component.png")

	// Exceptions: grouped, with the full text.
	ui(t, ctx, "open the exceptions", chromedp.Navigate(base+"/#/exceptions/"+c.name+"/flakybolt"))
	awaitJS(t, ctx, "flaky's exception group with count, tasks and full text", `(() => {
		const r = document.querySelector('tr.exception[data-component="flaky"]');
		if (!r) return {ok: false, status: document.getElementById("exceptions").innerText.slice(0, 200)};
		const d = r.querySelector("details");
		if (d) d.open = true;
		return {ok: parseInt(r.dataset.count) > 0 && !!d && d.querySelector("pre").textContent.length > 0, status: r.innerText.slice(0, 200)};
	})()`)
	screenshot(t, ctx, shots, "console-exceptions.png")

	// An instance's log as text: no JSON, search, paging, follow.
	var comp struct {
		Tasks []struct{ Task, Container int }
	}
	checked(t, doc, base, "/topologies/component", url.Values{"cluster": {c.name}, "topology": {"flakybolt"}, "component": {"flaky"}}, &comp)
	if len(comp.Tasks) != 2 {
		t.Fatalf("/topologies/component: %+v", comp)
	}
	task := comp.Tasks[0]
	ui(t, ctx, "open the log", chromedp.Navigate(fmt.Sprintf("%s/#/logs/%s/flakybolt/%d/instance-flaky-%d.log", base, c.name, task.Container, task.Task)))
	awaitJS(t, ctx, "the instance log rendered as text", `(() => {
		const p = document.getElementById("log-text");
		return {ok: p && parseInt(p.dataset.lines || "0") > 0 && !p.textContent.includes('{"level"') && /(INFO|WARN) /.test(p.textContent),
			status: p ? p.textContent.slice(0, 200) : "no log"};
	})()`)
	ui(t, ctx, "search the log", chromedp.SendKeys(chromedp.ID("log-grep"), "component error\n"))
	awaitJS(t, ctx, "only lines with 'component error'", `(() => {
		const p = document.getElementById("log-text");
		const lines = p.textContent.split("\n").filter(l => /^\d{4}-/.test(l));
		return {ok: lines.length > 0 && lines.every(l => l.toLowerCase().includes("component error")) && document.getElementById("log-info").textContent.includes("matching"),
			status: lines.length + " lines: " + p.textContent.slice(0, 200)};
	})()`)
	ui(t, ctx, "follow the log", chromedp.Click(chromedp.ID("log-follow")))
	awaitJS(t, ctx, "followed lines to arrive", `(() => {
		const p = document.getElementById("log-text");
		window.__seen = window.__seen || parseInt(p.dataset.lines);
		return {ok: parseInt(p.dataset.lines) > window.__seen, status: p.dataset.lines + " lines, first " + window.__seen};
	})()`)
	screenshot(t, ctx, shots, "console-logs.png")

	// Actions, each through its confirmation.
	ui(t, ctx, "open the topology for actions", chromedp.Navigate(topo))
	awaitJS(t, ctx, "the actions bar", `(() => ({ok: !!document.getElementById("act-kill"), status: document.getElementById("actions-box").innerText}))()`)
	awaitJS(t, ctx, "no savepoint for an at-least-once topology", `(() => {
		const b = document.getElementById("act-savepoint");
		return {ok: !!b && b.hidden && document.querySelector('[data-fact="delivery"]') !== null, status: b ? (b.hidden ? "hidden" : "shown") : "no button"};
	})()`)
	ui(t, ctx, "enter the token", chromedp.SendKeys(chromedp.ID("token"), token))
	actions := 0
	action := func(what, button string, setup ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		actions++
		ui(t, ctx, "prepare "+what, setup...)
		ui(t, ctx, "start "+what, chromedp.Click(chromedp.ID(button)), chromedp.WaitVisible(chromedp.ID("confirm")))
		ui(t, ctx, "confirm "+what, chromedp.Click(chromedp.ID("confirm-ok")))
		awaitJS(t, ctx, what+" to succeed", fmt.Sprintf(`(() => {
			const s = document.getElementById("action-status");
			return {ok: s && s.dataset.id === "%d" && s.dataset.state === "succeeded", status: s ? s.textContent : "no status"};
		})()`, actions))
	}
	stateIs := func(want string) {
		t.Helper()
		await(t, "the topology to be "+want, trackerTimeout, func() (bool, string) {
			var l struct{ Topologies []trackerTopology }
			checked(t, doc, base, "/topologies", url.Values{"cluster": {c.name}}, &l)
			for _, tp := range l.Topologies {
				if tp.Name == "flakybolt" {
					return tp.State == want, tp.State
				}
			}
			return false, "not listed"
		})
	}
	action("deactivate", "act-deactivate")
	stateIs("deactivated")
	awaitJS(t, ctx, "the health to say deactivated", `(() => {
		const r = document.getElementById("health-reasons").innerText;
		return {ok: r.includes("deactivated"), status: r};
	})()`)
	screenshot(t, ctx, shots, "console-deactivated.png")
	action("activate", "act-activate")
	stateIs("running")
	action("log level debug for flaky", "act-loglevel",
		chromedp.SetValue(chromedp.ID("loglevel-level"), "debug"), chromedp.SetValue(chromedp.ID("loglevel-component"), "flaky"))
	action("rescale flaky to 3", "act-rescale",
		chromedp.SetValue(chromedp.ID("rescale-component"), "flaky"), chromedp.SetValue(chromedp.ID("rescale-parallelism"), "3"))
	var lp struct {
		Components []struct {
			Name        string
			Parallelism int
		}
	}
	checked(t, doc, base, "/topologies/logicalplan", q, &lp)
	for _, cp := range lp.Components {
		if cp.Name == "flaky" && cp.Parallelism != 3 {
			t.Errorf("after the rescale flaky runs %d tasks, want 3", cp.Parallelism)
		}
	}
	// Kill: the confirmation needs the topology's name typed.
	ui(t, ctx, "start the kill", chromedp.Click(chromedp.ID("act-kill")), chromedp.WaitVisible(chromedp.ID("confirm-name")))
	disabled, err := evalJS[bool](ctx, `document.getElementById("confirm-ok").disabled`)
	if err != nil || !disabled {
		t.Fatalf("the kill's confirm button is enabled before the name is typed (%v)", err)
	}
	screenshot(t, ctx, shots, "console-kill-confirm.png")
	ui(t, ctx, "type the name and confirm the kill", chromedp.SendKeys(chromedp.ID("confirm-name"), "flakybolt"), chromedp.Click(chromedp.ID("confirm-ok")))
	awaitJS(t, ctx, "the kill to succeed and the list to lose flakybolt", `(() => {
		const row = document.querySelector('tr[data-topology="flakybolt"]');
		return {ok: location.hash === "#/" && document.getElementById("topologies") && !row, status: location.hash + " " + (row ? row.innerText : "")};
	})()`)
	var acts struct {
		Actions []struct{ Action, State, Message string }
	}
	checked(t, doc, base, "/actions", nil, &acts)
	if len(acts.Actions) != 5 || acts.Actions[0].Action != "kill" || acts.Actions[0].State != "succeeded" {
		t.Errorf("/actions: %+v", acts.Actions)
	}
	c.waitGone(t)
}

// TestConsoleCheckpoints: the console of an effectively-once topology
// (checkpoints every second) shows the last checkpoint in the topology's
// facts, a history of completed checkpoints with durations and sizes,
// the topology manager's counters and every task's checkpoint metrics,
// as the tracker's API gives them; read-only (no operator token): no
// action buttons.
func TestConsoleCheckpoints(t *testing.T) {
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
	startEOCount(t, c, "eoconsole", 50_000_000, "--rate", "500")
	base := startTracker(t, c)
	waitTrackerRunning(t, doc, base, c.name, "eoconsole")
	if err := chromedp.Do(ctx, chromedp.Navigate(base+"/#/topology/"+c.name+"/eoconsole")); err != nil {
		t.Fatal(err)
	}
	awaitJS(t, ctx, "the checkpoint history, counters, per-task metrics and the last checkpoint fact", `(() => {
		const rows = [...document.querySelectorAll("#checkpoint-history tr.checkpoint")];
		const tasks = document.querySelectorAll("#checkpoint-tasks tbody tr").length;
		const fact = document.querySelector('[data-fact="last checkpoint"]');
		const counters = document.getElementById("checkpoint-counters");
		return {ok: rows.length >= 3 && tasks > 0 && fact && /#\d+/.test(fact.innerText) && counters && /completed [1-9]/.test(counters.textContent) &&
			document.getElementById("actions").innerText.includes("Read-only") && !document.getElementById("act-kill"),
			status: rows.length + " checkpoints, " + tasks + " task rows, fact " + (fact ? fact.innerText : "none")};
	})()`)
	screenshot(t, ctx, shots, "console-checkpoints.png")
	var ck struct {
		Enabled bool
		History []struct {
			ID          int64
			DurationMs  float64 `json:"duration_ms"`
			AlignmentMs float64 `json:"alignment_ms"`
			SizeBytes   float64 `json:"size_bytes"`
		}
		Tasks []struct {
			Task    int
			Metrics map[string]float64
		}
	}
	checked(t, doc, base, "/topologies/checkpoints", url.Values{"cluster": {c.name}, "topology": {"eoconsole"}}, &ck)
	if !ck.Enabled || len(ck.History) < 3 || len(ck.Tasks) == 0 {
		t.Fatalf("/topologies/checkpoints: %+v", ck)
	}
	aligned := false
	for i, h := range ck.History {
		if i > 0 && h.ID <= ck.History[i-1].ID {
			t.Errorf("history not ascending: %+v", ck.History)
		}
		// A task's alignment is part of the checkpoint; the count bolts
		// align the barriers of two spout tasks.
		if h.AlignmentMs < 0 || h.AlignmentMs > h.DurationMs+1 {
			t.Errorf("checkpoint %d: alignment %.3f ms in a checkpoint of %.0f ms", h.ID, h.AlignmentMs, h.DurationMs)
		}
		aligned = aligned || h.AlignmentMs > 0
	}
	if !aligned {
		t.Errorf("no checkpoint reports a barrier alignment time: %+v", ck.History)
	}

	// With the operator token, the savepoint action: a savepoint of the
	// running topology in the cluster's savepoint directory.
	tokenFile := filepath.Join(t.TempDir(), "token")
	const token = "console-savepoint-token-0123"
	if err := os.WriteFile(tokenFile, []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	base = startTracker(t, c, "--operator-token-file", tokenFile)
	ui(t, ctx, "open the topology for actions", chromedp.Navigate(base+"/#/topology/"+c.name+"/eoconsole"))
	awaitJS(t, ctx, "the savepoint button (an effectively-once topology)", `(() => {
		const b = document.getElementById("act-savepoint");
		return {ok: !!b && !b.hidden, status: b ? (b.hidden ? "hidden" : "shown") : "no button"};
	})()`)
	ui(t, ctx, "enter the token", chromedp.SendKeys(chromedp.ID("token"), token))
	ui(t, ctx, "start the savepoint", chromedp.Click(chromedp.ID("act-savepoint")), chromedp.WaitVisible(chromedp.ID("confirm")))
	ui(t, ctx, "confirm the savepoint", chromedp.Click(chromedp.ID("confirm-ok")))
	awaitJS(t, ctx, "the savepoint to succeed", `(() => {
		const s = document.getElementById("action-status");
		return {ok: s && s.dataset.state === "succeeded" && /savepoint .*eoconsole-.*checkpoint \d+/.test(s.textContent), status: s ? s.textContent : "no status"};
	})()`)
	screenshot(t, ctx, shots, "console-savepoint.png")
	if list := c.mustEgret("savepoints", "list", c.name); !strings.Contains(list, "eoconsole-") {
		t.Errorf("egret savepoints list does not show the console's savepoint:\n%s", list)
	}
	c.mustEgret("kill", c.name, "eoconsole")
	c.waitGone(t)
}

// TestConsoleBackPressure: a bolt held at 200 tuples/s behind an
// unthrottled spout (slowbolt, 1 KiB tuples) causes back pressure: the
// overview names it as the cause (a share of time above 0) and the spout
// as throttled, the health says so, and the console's DAG outlines the
// slow bolt in red and fills it by its busy-ness.
func TestConsoleBackPressure(t *testing.T) {
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
	c.mustEgret("submit", c.name, binary(t, "slowbolt"), "--", "--state", t.TempDir(), "--rate", "200", "--payload", "1024")
	base := startTracker(t, c)
	waitTrackerRunning(t, doc, base, c.name, "slowbolt")
	q := url.Values{"cluster": {c.name}, "topology": {"slowbolt"}}
	await(t, "the overview to name the slow bolt as causing back pressure and the spout as throttled", trackerTimeout, func() (bool, string) {
		var ov struct {
			Health     struct{ Level string }
			Components []struct {
				Name         string
				Busy         *float64
				BackPressure float64 `json:"backpressure"`
			}
		}
		checked(t, doc, base, "/topologies/overview", q, &ov)
		bp := map[string]float64{}
		for _, cp := range ov.Components {
			bp[cp.Name] = cp.BackPressure
		}
		return bp["slow"] > 0 && bp["source"] > 0, fmt.Sprintf("%+v", ov)
	})
	if err := chromedp.Do(ctx, chromedp.Navigate(base+"/#/topology/"+c.name+"/slowbolt")); err != nil {
		t.Fatal(err)
	}
	awaitJS(t, ctx, "the DAG to outline the slow bolt in red", `(() => {
		const g = document.querySelector('#dag g.node[data-component="slow"]');
		if (!g) return {ok: false, status: "no node"};
		const rect = g.querySelector("rect");
		return {ok: parseFloat(g.dataset.backpressure) > 0.05 && rect.style.stroke !== "" && /192, 57, 43|c0392b/i.test(rect.style.stroke),
			status: "bp " + g.dataset.backpressure + " stroke " + rect.style.stroke + " busy " + g.dataset.busy};
	})()`)
	screenshot(t, ctx, shots, "console-backpressure.png")
	c.mustEgret("kill", c.name, "slowbolt", "--now")
	c.waitGone(t)
}
