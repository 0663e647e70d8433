package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/egret-stream/egret/daemons/metricsmgr"
)

// prometheusBinary returns Debian's prometheus, skipping the test when it
// is absent (failing it when EGRET_REQUIRE_PROMETHEUS=1, as make test sets).
func prometheusBinary(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("EGRET_PROMETHEUS_BIN"); p != "" {
		return p
	}
	p, err := exec.LookPath("prometheus")
	if err != nil {
		if os.Getenv("EGRET_REQUIRE_PROMETHEUS") == "1" {
			t.Fatal("prometheus is not installed and EGRET_REQUIRE_PROMETHEUS=1: apt-get install --no-install-recommends prometheus (make test-deps does)")
		}
		t.Skip("prometheus is not installed (apt-get install --no-install-recommends prometheus, or set EGRET_PROMETHEUS_BIN)")
	}
	return p
}

// startPrometheus runs a real Prometheus that discovers its targets from
// files (file_sd).
func startPrometheus(t *testing.T, targetFiles []string) string {
	t.Helper()
	quoted := make([]string, len(targetFiles))
	for i, f := range targetFiles {
		quoted[i] = strconv.Quote(f)
	}
	return startPrometheusWith(t, fmt.Sprintf("global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\nscrape_configs:\n  - job_name: egret\n    file_sd_configs:\n      - files: [%s]\n        refresh_interval: 1s\n",
		strings.Join(quoted, ", ")))
}

// startPrometheusWith runs a real Prometheus with the given configuration
// and returns its HTTP address.
func startPrometheusWith(t *testing.T, cfg string) string {
	t.Helper()
	bin := prometheusBinary(t)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "prometheus.yml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "--config.file="+filepath.Join(dir, "prometheus.yml"), "--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address=127.0.0.1:0")
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	})
	addr := make(chan string, 1)
	var logTail []string
	go func() {
		defer close(done)
		listening := regexp.MustCompile(`msg="Listening on" address=(127\.0\.0\.1:\d+)`)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if m := listening.FindStringSubmatch(sc.Text()); m != nil {
				addr <- m[1]
			}
			if len(logTail) < 200 {
				logTail = append(logTail, sc.Text())
			}
		}
		_ = cmd.Wait()
	}()
	select {
	case a := <-addr:
		return "http://" + a
	case <-done:
		t.Fatalf("prometheus exited before listening:\n%s", strings.Join(logTail, "\n"))
	case <-time.After(time.Minute):
		t.Fatal("prometheus did not listen within a minute")
	}
	return ""
}

// promQuery runs an instant query and returns each series' labels and value.
func promQuery(promURL, q string) (map[string]float64, error) {
	var r struct {
		Status string
		Data   struct {
			Result []struct {
				Metric map[string]string
				Value  [2]any
			}
		}
	}
	if err := getJSON(promURL+"/api/v1/query?query="+url.QueryEscape(q), &r); err != nil {
		return nil, err
	}
	if r.Status != "success" {
		return nil, fmt.Errorf("query %s: status %s", q, r.Status)
	}
	out := map[string]float64{}
	for _, s := range r.Data.Result {
		v, _ := strconv.ParseFloat(fmt.Sprint(s.Value[1]), 64)
		b, _ := json.Marshal(s.Metric)
		out[string(b)] = v
	}
	return out, nil
}

// promScalar returns the value of a query that yields one series (0, false
// when it yields none).
func promScalar(promURL, q string) (float64, bool) {
	res, err := promQuery(promURL, q)
	if err != nil || len(res) != 1 {
		return 0, false
	}
	for _, v := range res {
		return v, true
	}
	return 0, false
}

// waitPromRising waits until the instant query q (one series) is above 0
// and then above its first value.
func waitPromRising(t *testing.T, prom, q, what string) {
	t.Helper()
	var first float64
	waitFor(t, what+" in prometheus", 2*time.Minute, func() bool {
		v, ok := promScalar(prom, q)
		first = v
		return ok && v > 0
	})
	waitFor(t, what+" to rise in prometheus", 2*time.Minute, func() bool {
		v, ok := promScalar(prom, q)
		return ok && v > first
	})
}

// targetsFiles waits for the targets files of n containers and returns
// their paths.
func targetsFiles(t *testing.T, c *cluster, n int) []string {
	t.Helper()
	var files []string
	waitFor(t, fmt.Sprintf("the targets files of %d containers", n), 2*time.Minute, func() bool {
		files = nil
		_ = filepath.WalkDir(c.home, func(p string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() && d.Name() == metricsmgr.TargetsFileName {
				files = append(files, p)
			}
			return nil
		})
		return len(files) == n
	})
	return files
}

// TestGrafanaDashboardQueries: every PromQL expression of the Grafana
// dashboard in docs/grafana (its panels' and its topology variable's)
// returns series from a real Prometheus scraping an at-least-once
// topology on two containers.
func TestGrafanaDashboardQueries(t *testing.T) {
	prometheusBinary(t)
	b, err := os.ReadFile(filepath.Join(repoRoot(), "docs", "grafana", "egret-topology.json"))
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Panels []struct {
			Title   string
			Targets []struct{ Expr string }
		}
		Templating struct {
			List []struct {
				Name  string
				Query any
			}
		}
	}
	if err := json.Unmarshal(b, &dash); err != nil {
		t.Fatalf("the dashboard is not JSON: %v", err)
	}
	c := newCluster(t, "local", "egret.metrics.sinks=file,tmanager,prometheus")
	run := startAckCheck(t, c, "dashboard", 0, "--rate", "500")
	prom := startPrometheus(t, targetsFiles(t, c, 3))
	exprs := 0
	for _, p := range dash.Panels {
		for _, tg := range p.Targets {
			exprs++
			q := strings.NewReplacer("$topology", "dashboard", "$__rate_interval", "30s").Replace(tg.Expr)
			await(t, fmt.Sprintf("panel %q to have series: %s", p.Title, q), 2*time.Minute, func() (bool, string) {
				res, err := promQuery(prom, q)
				if err != nil {
					return false, err.Error()
				}
				return len(res) > 0, fmt.Sprintf("%d series", len(res))
			})
		}
	}
	if exprs < 10 {
		t.Fatalf("only %d expressions in the dashboard", exprs)
	}
	// The topology variable: label_values(<metric>, topology) lists it.
	for _, v := range dash.Templating.List {
		if v.Name != "topology" {
			continue
		}
		def, _ := json.Marshal(v.Query)
		m := regexp.MustCompile(`label_values\((\w+), topology\)`).FindSubmatch(def)
		if m == nil {
			t.Fatalf("the topology variable's query is not label_values(metric, topology): %s", def)
		}
		res, err := promQuery(prom, fmt.Sprintf(`count by (topology) (%s{topology="dashboard"})`, m[1]))
		if err != nil || len(res) != 1 {
			t.Errorf("the topology variable's metric %s does not list the topology: %v %v", m[1], res, err)
		}
	}
	run.kill()
}

// TestPrometheusScrapesATopology: a real Prometheus, given the targets
// files the metrics managers write, scrapes every container of a running
// word count, and the query API returns its series with rising values.
func TestPrometheusScrapesATopology(t *testing.T) {
	prometheusBinary(t)
	c := newCluster(t, "local", "egret.metrics.sinks=file,tmanager,prometheus")
	c.mustEgret("submit", c.name, binary(t, "wordcount"), "--", "--containers", "2")
	prom := startPrometheus(t, targetsFiles(t, c, 3))

	waitFor(t, "prometheus to see every container up", 2*time.Minute, func() bool {
		v, ok := promScalar(prom, `count(up{job="egret"} == 1)`)
		return ok && v == 3
	})
	waitPromRising(t, prom, `sum(egret_instance_executed_total{topology="wordcount",component="count"})`, "executed tuples of the count bolts")
	// One series per task, labelled with its container and component. A
	// task's series appear once its first report was scraped: on a busy
	// machine some tasks report after the others.
	pp, _, err := c.store().PackingPlan(context.Background(), "wordcount")
	if err != nil {
		t.Fatal(err)
	}
	tasks := 0
	for _, ct := range pp.Containers {
		tasks += len(ct.Instances)
	}
	await(t, "a series of every component and of the stream managers in prometheus", 2*time.Minute, func() (bool, string) {
		perTask, err := promQuery(prom, `egret_instance_executed_total{topology="wordcount"}`)
		if err != nil {
			return false, err.Error()
		}
		components := map[string]bool{}
		for labels := range perTask {
			var l map[string]string
			_ = json.Unmarshal([]byte(labels), &l)
			if l["task"] == "" || l["container"] == "" || l["egret_container"] != l["container"] {
				t.Fatalf("series without task/container labels, or scraped from another container: %v", l)
			}
			components[l["component"]] = true
		}
		for _, comp := range []string{"sentence", "split", "count"} {
			if !components[comp] {
				return false, fmt.Sprintf("no egret_instance_executed_total series of component %s (got %v)", comp, components)
			}
		}
		if len(perTask) != tasks {
			return false, fmt.Sprintf("%d series of egret_instance_executed_total, want one per task (%d)", len(perTask), tasks)
		}
		if _, ok := promScalar(prom, `sum(egret_stmgr_tuples_to_instances_total{topology="wordcount"})`); !ok {
			return false, "no stream manager series"
		}
		return true, fmt.Sprintf("components %v", components)
	})
	// Every process reports its own: the instances, 2 stream managers, and
	// in each of the 3 containers the executor, the metrics manager and the
	// shell, and the topology manager.
	procs := float64(tasks + 2 + 3*3 + 1)
	for _, q := range []string{`count(egret_process_rss_bytes{topology="wordcount"} > 0)`, `count(egret_process_cpu_seconds_total{topology="wordcount"})`, `count(egret_process_goroutines{topology="wordcount"} > 0)`} {
		waitFor(t, fmt.Sprintf("%s to count %v processes (instances, 2 stream managers, 3 executors, 3 metrics managers, 3 shells, the topology manager)", q, procs), time.Minute, func() bool {
			v, _ := promScalar(prom, q)
			return v == procs
		})
	}
	if _, ok := promScalar(prom, `sum(rate(egret_instance_execute_latency_seconds_sum{component="count"}[30s])) / sum(rate(egret_instance_execute_latency_seconds_count{component="count"}[30s]))`); !ok {
		t.Error("the execute latency histogram gives no average")
	}
	waitFor(t, "a p99 execute latency of the count bolts from the histogram's buckets", time.Minute, func() bool {
		v, ok := promScalar(prom, `histogram_quantile(0.99, sum by (le) (rate(egret_instance_execute_latency_seconds_bucket{topology="wordcount",component="count"}[30s])))`)
		return ok && v > 0 && v <= 16
	})
	c.mustEgret("kill", c.name, "wordcount")
	c.waitGone(t)
}
