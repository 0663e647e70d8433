package e2e

// The backend suite (issue 39): one table of topology-level scenarios,
// written once, run against every backend that runs here. Each backend is
// a column of the matrix in docs/backends.md; each scenario a row. A cell
// either passes or names a reason that is a property of the backend
// (backend.notPossible), never of Egret.
//
// The matrix is generated from the suite's run: with -backends.update the
// run writes each backend's results to testdata/backends/<backend>.json
// and renders docs/backends.md from every column's file (make
// backends-matrix); TestBackendMatrixCurrent checks, on every run, that the
// committed files cover exactly the scenarios and backends defined here and
// that the document is their rendering.
//
// A backend's resource manager (a Nomad agent, the YARN mini-cluster, a
// Slurm controller, the Mesos and Aurora fakes) is started once and shared
// by its scenarios; the backends run side by side (go test -parallel), the
// scenarios of one backend one after the other, in the order of the table.
// A backend plugs in with registerBackend from an init function of a file
// of its own (the real Kubernetes of internal/k8stest:
// backends_kubernetes_test.go).

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

var updateBackends = flag.Bool("backends.update", false, "write the backend suite's results to testdata/backends and render docs/backends.md from them")

// backend is one column of the matrix.
type backend struct {
	name string
	// start returns a cluster of the backend, its resource manager started
	// for t (the backend's test) and shared by every scenario.
	start func(t *testing.T) *cluster
	// notPossible maps a scenario id to why the backend cannot run it: a
	// property of the backend (of what the resource manager can do), not
	// a missing feature of Egret's.
	notPossible map[string]string
}

// backends are the columns, in the order of registerBackend.
var backends []backend

// registerBackend adds a column to the suite. Call it from an init
// function; the names must be unique.
func registerBackend(b backend) {
	for _, o := range backends {
		if o.name == b.name {
			panic("backend suite: two backends named " + b.name)
		}
	}
	backends = append(backends, b)
}

// cellResult is one cell of the matrix as a run left it.
type cellResult struct {
	// Result is "pass", "fail" or "not possible".
	Result  string  `json:"result"`
	Reason  string  `json:"reason,omitempty"`
	Seconds float64 `json:"seconds,omitempty"`
}

// Results of a cell.
const (
	resultPass        = "pass"
	resultFail        = "fail"
	resultNotPossible = "not possible"
)

// TestBackends runs every group of scenarios on every registered backend.
func TestBackends(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the backend suite runs real clusters")
	}
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			// Backends run side by side, as many as go test -parallel
			// allows (GOMAXPROCS by default): their clusters, processes
			// and state are apart, and their topologies mostly wait.
			t.Parallel()
			began := time.Now()
			results := map[string]cellResult{}
			defer func() {
				t.Logf("backend %s: every scenario took %s", b.name, time.Since(began).Round(time.Second))
				// A row no group reached (the cluster did not start, an
				// earlier step failed) failed.
				for _, r := range rows {
					if _, ok := results[r.id]; !ok {
						results[r.id] = cellResult{Result: resultFail, Reason: "not reached"}
					}
				}
				if *updateBackends && !t.Skipped() {
					writeBackendResults(t, b.name, results)
				}
			}()
			c := b.start(t)
			t.Logf("backend %s: cluster started in %s", b.name, time.Since(began).Round(time.Second))
			for _, g := range groups {
				t.Run(g.name, func(t *testing.T) {
					cell := func(id string, f func(t *testing.T)) bool {
						if why, ok := b.notPossible[id]; ok {
							results[id] = cellResult{Result: resultNotPossible, Reason: why}
							return false
						}
						cellBegan := time.Now()
						ok := t.Run(id, f)
						r := cellResult{Result: resultPass, Seconds: time.Since(cellBegan).Round(time.Second).Seconds()}
						if !ok {
							r.Result = resultFail
						}
						results[id] = r
						return ok
					}
					possible := false
					for _, id := range g.rows {
						if _, no := b.notPossible[id]; !no {
							possible = true
						} else {
							cell(id, nil)
						}
					}
					if !possible {
						return
					}
					sc := *c
					sc.t = t
					// Whatever a failed cell left running is gone before the
					// next group: its processes would hold the next ones up.
					t.Cleanup(func() { sc.killTopologies(t.Failed()) })
					g.run(t, &sc, cell)
				})
			}
		})
	}
}

// backendResultsDir holds one results file per backend.
const backendResultsDir = "testdata/backends"

// backendMatrixDoc is the generated document.
var backendMatrixDoc = filepath.Join("..", "..", "docs", "backends.md")

// resultsMu serializes the writes of the backends running side by side.
var resultsMu sync.Mutex

func writeBackendResults(t *testing.T, name string, results map[string]cellResult) {
	resultsMu.Lock()
	defer resultsMu.Unlock()
	if err := os.MkdirAll(backendResultsDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := writeJSONFile(filepath.Join(backendResultsDir, name+".json"), results); err != nil {
		t.Fatal(err)
	}
	doc, err := renderBackendMatrix()
	if err != nil {
		// Another backend has no results yet: its run renders the page.
		t.Logf("%s not rendered: %v", backendMatrixDoc, err)
		return
	}
	if err := os.WriteFile(backendMatrixDoc, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
}

// readBackendResults reads every backend's committed results.
func readBackendResults() (map[string]map[string]cellResult, error) {
	out := map[string]map[string]cellResult{}
	for _, b := range backends {
		var r map[string]cellResult
		if err := readJSONFile(filepath.Join(backendResultsDir, b.name+".json"), &r); err != nil {
			return nil, fmt.Errorf("backend %s has no results (run make backends-matrix): %w", b.name, err)
		}
		out[b.name] = r
	}
	return out, nil
}

// renderBackendMatrix renders docs/backends.md from the results files.
func renderBackendMatrix() (string, error) {
	all, err := readBackendResults()
	if err != nil {
		return "", err
	}
	var sb strings.Builder
	sb.WriteString("# What runs on which backend\n\n")
	sb.WriteString("<!-- Generated by `make backends-matrix` (go test ./test/e2e -run TestBackends -backends.update) from test/e2e/testdata/backends/*.json. Do not edit. -->\n\n")
	sb.WriteString("The backend suite (`test/e2e/backends_test.go`, `TestBackends`) runs one table of scenarios on a\n")
	sb.WriteString("real cluster of every backend that runs on the test machine, with data flowing. A cell is ✓ when the\n")
	sb.WriteString("scenario passed in the run that wrote this page, ✗ when it failed, and otherwise names why the\n")
	sb.WriteString("backend cannot run it. `TestBackendMatrixCurrent` fails when this page is not the rendering of the\n")
	sb.WriteString("committed results or when they do not cover every scenario and backend of the suite.\n\n")
	sb.WriteString("| scenario |")
	for _, b := range backends {
		sb.WriteString(" " + b.name + " |")
	}
	sb.WriteString("\n|---|")
	for range backends {
		sb.WriteString("---|")
	}
	sb.WriteString("\n")
	var notes []string
	for _, s := range rows {
		sb.WriteString("| " + s.title + " |")
		for _, b := range backends {
			r := all[b.name][s.id]
			switch r.Result {
			case resultPass:
				sb.WriteString(" ✓ |")
			case resultFail:
				sb.WriteString(" ✗ |")
			case resultNotPossible:
				notes = append(notes, fmt.Sprintf("%s, %s: %s", b.name, s.title, r.Reason))
				fmt.Fprintf(&sb, " not possible here [%d] |", len(notes))
			default:
				return "", fmt.Errorf("backend %s, scenario %s: no result", b.name, s.id)
			}
		}
		sb.WriteString("\n")
	}
	if len(notes) > 0 {
		sb.WriteString("\n")
		for i, n := range notes {
			fmt.Fprintf(&sb, "%d. %s\n", i+1, n)
		}
	}
	sb.WriteString("\nSeconds the cells of each backend took in that run (one cluster per backend, shared by its cells; the cluster's start and the submissions between cells not counted):\n\n")
	sb.WriteString("| backend | seconds |\n|---|---|\n")
	for _, b := range backends {
		var total float64
		for _, r := range all[b.name] {
			total += r.Seconds
		}
		fmt.Fprintf(&sb, "| %s | %.0f |\n", b.name, total)
	}
	sb.WriteString("\nThe Kubernetes column runs in real pods of egret's image on the real node of internal/k8stest, after the other\n")
	sb.WriteString("real-Kubernetes tests of `make test`. A backend joins the suite with `registerBackend`\n")
	sb.WriteString("(test/e2e/backends_test.go) from a file of its own.\n")
	return sb.String(), nil
}

// TestBackendMatrixCurrent: the committed results cover exactly the
// scenarios and backends of the suite, the reasons are the ones declared,
// and docs/backends.md is their rendering.
func TestBackendMatrixCurrent(t *testing.T) {
	all, err := readBackendResults()
	if err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(backendResultsDir, "*.json"))
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".json")
		if _, ok := all[name]; !ok {
			t.Errorf("%s: results of a backend the suite does not define", f)
		}
	}
	ids := map[string]bool{}
	for _, s := range rows {
		if ids[s.id] {
			t.Errorf("two rows named %s", s.id)
		}
		ids[s.id] = true
	}
	covered := map[string]string{}
	for _, g := range groups {
		for _, id := range g.rows {
			if !ids[id] {
				t.Errorf("group %s covers row %s, which the matrix does not have", g.name, id)
			}
			if o, ok := covered[id]; ok {
				t.Errorf("row %s is covered by groups %s and %s", id, o, g.name)
			}
			covered[id] = g.name
		}
	}
	for id := range ids {
		if _, ok := covered[id]; !ok {
			t.Errorf("row %s is covered by no group", id)
		}
	}
	for _, b := range backends {
		for id := range b.notPossible {
			if !ids[id] {
				t.Errorf("backend %s declares scenario %s not possible, which the suite does not define", b.name, id)
			}
		}
		var got []string
		for id, r := range all[b.name] {
			got = append(got, id)
			want, declared := b.notPossible[id]
			switch {
			case !ids[id]:
				t.Errorf("backend %s: result of scenario %s, which the suite does not define", b.name, id)
			case declared && (r.Result != resultNotPossible || r.Reason != want):
				t.Errorf("backend %s, scenario %s: committed %q (%s), the suite declares it not possible: %s", b.name, id, r.Result, r.Reason, want)
			case !declared && r.Result == resultNotPossible:
				t.Errorf("backend %s, scenario %s: committed as not possible (%s), the suite runs it", b.name, id, r.Reason)
			}
		}
		sort.Strings(got)
		if len(got) != len(rows) {
			t.Errorf("backend %s: results of %v, want one per row (%d)", b.name, got, len(rows))
		}
	}
	want, err := renderBackendMatrix()
	if err != nil {
		t.Fatal(err)
	}
	if *updateBackends {
		if err := os.WriteFile(backendMatrixDoc, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	have, err := os.ReadFile(backendMatrixDoc)
	if err != nil {
		t.Fatal(err)
	}
	if string(have) != want {
		t.Errorf("%s is not the rendering of %s (run make backends-matrix)", backendMatrixDoc, backendResultsDir)
	}
}

// killTopologies kills every topology the cluster lists (after a failed
// cell), first logging the tail of their containers' logs read with egret
// logs when failed is set, then waits until no process is left.
func (c *cluster) killTopologies(failed bool) {
	c.t.Helper()
	out, _, code := c.egret("list", c.name, "--output", "json")
	if code != 0 {
		return
	}
	var infos []struct{ Name string }
	_ = json.Unmarshal([]byte(out), &infos)
	for _, i := range infos {
		if failed {
			c.logTopology(i.Name)
		}
		c.egret("kill", c.name, i.Name, "--now")
	}
	if len(infos) > 0 {
		c.waitGone(c.t)
	}
}

// logTopology logs the last lines of every log file of a topology's
// containers, read through egret logs (the containers' shells), as a
// user of any backend would.
func (c *cluster) logTopology(topology string) {
	pp, _, err := c.store().PackingPlan(context.Background(), topology)
	if err != nil {
		c.t.Logf("== %s: no packing plan: %v", topology, err)
		return
	}
	for id := 0; id <= len(pp.Containers); id++ {
		list, stderr, code := c.egret("logs", c.name, topology, "container", strconv.Itoa(id))
		if code != 0 {
			c.t.Logf("== %s container %d: %s", topology, id, strings.TrimSpace(stderr))
			continue
		}
		for _, f := range strings.Fields(list) {
			if !strings.HasSuffix(f, ".log") {
				continue
			}
			tail, _, _ := c.egret("logs", c.name, topology, "container", strconv.Itoa(id), "--file", f, "--tail", "15")
			c.t.Logf("== %s container %d %s\n%s", topology, id, f, tail)
		}
	}
}
