package e2e

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/egret-stream/egret/core/spi"
	"github.com/egret-stream/egret/examples/wordcount/wordcount"
)

// submitWordCount submits a bounded word count and returns its report
// directory.
func submitWordCount(t *testing.T, c *cluster, containers, sentences int, extra ...string) string {
	t.Helper()
	reports := t.TempDir()
	args := append([]string{"submit", c.name, binary(t, "wordcount")}, extra...)
	args = append(args, "--", "--containers", fmt.Sprint(containers), "--sentences", fmt.Sprint(sentences), "--report-dir", reports)
	out := c.mustEgret(args...)
	for _, step := range []string{"defining", "packing", "uploading", "writing topology state", "launching", "is running",
		fmt.Sprintf("launching %d containers", containers+1), "container 0 runs the topology manager"} {
		if !strings.Contains(out, step) {
			t.Errorf("submit printed no %q progress line:\n%s", step, out)
		}
	}
	checkFreshMetrics(t, c, "wordcount")
	return reports
}

// checkFreshMetrics runs egret metrics right after a submit: a component
// none of whose instances has reported yet shows no figures ("-", not
// zeros) and the output says that no report has arrived; one that has
// reported shows its memory.
func checkFreshMetrics(t *testing.T, c *cluster, topology string) {
	t.Helper()
	out := c.mustEgret("metrics", c.name, topology)
	silent := false
	for _, line := range strings.Split(out, "\n")[1:] {
		f := strings.Fields(line)
		if len(f) < 8 || strings.HasPrefix(line, "no metrics") {
			continue
		}
		switch {
		case f[1] == "-":
			silent = true
		case f[7] == "0":
			t.Errorf("egret metrics shows zeros for %s as if it had reported:\n%s", f[0], out)
		}
	}
	if silent != strings.Contains(out, "no metrics report has arrived yet from") {
		t.Errorf("egret metrics right after submit: components without a report and the note disagree:\n%s", out)
	}
}

// exactCounts waits until the count bolts have counted every word the
// spout emitted, per word.
func exactCounts(t *testing.T, reports string) map[string]int64 {
	t.Helper()
	var emitted, counted map[string]int64
	await(t, "the count bolts to count every emitted word", 3*time.Minute, func() (bool, string) {
		var err error
		if emitted, err = wordcount.ReadReports(reports, "sentence-"); err != nil || len(emitted) == 0 {
			return false, fmt.Sprintf("no spout report yet (%v)", err)
		}
		counted, err = wordcount.ReadReports(reports, "count-")
		if err == nil && reflect.DeepEqual(emitted, counted) {
			return true, ""
		}
		var e, c int64
		var differ []string
		for w, n := range emitted {
			e += n
			if counted[w] != n && len(differ) < 5 {
				differ = append(differ, fmt.Sprintf("%s %d/%d", w, counted[w], n))
			}
		}
		for _, n := range counted {
			c += n
		}
		return false, fmt.Sprintf("%d words counted of %d emitted; counted/emitted of some words: %v (%v)", c, e, differ, err)
	})
	return counted
}

func TestWordCountExactOnOneAndThreeContainers(t *testing.T) {
	for _, containers := range []int{1, 3} {
		t.Run(fmt.Sprintf("%d-containers", containers), func(t *testing.T) {
			c := newCluster(t, "local")
			reports := submitWordCount(t, c, containers, 20000)
			counts := exactCounts(t, reports)
			var total int64
			for _, n := range counts {
				total += n
			}
			if total == 0 {
				t.Fatal("no word counted")
			}
			list := c.mustEgret("list", c.name)
			if !strings.Contains(list, "wordcount") || !strings.Contains(list, "running") {
				t.Errorf("list does not show the running topology:\n%s", list)
			}
			if loc, err := c.store().SchedulerLocation(context.Background(), "wordcount"); err != nil || loc.GetHttpEndpoint() == "" {
				t.Errorf("scheduler location: %v %v", loc, err)
			}
			pp, _, err := c.store().PackingPlan(context.Background(), "wordcount")
			if err != nil || len(pp.Containers) != containers {
				t.Fatalf("packing plan: %v, %d containers, want %d", err, len(pp.Containers), containers)
			}
			c.mustEgret("kill", c.name, "wordcount")
			c.waitGone(t)
			if _, err := c.store().Topology(context.Background(), "wordcount"); !errors.Is(err, spi.ErrNotFound) {
				t.Errorf("state left after kill: %v", err)
			}
			if _, err := c.store().SchedulerLocation(context.Background(), "wordcount"); !errors.Is(err, spi.ErrNotFound) {
				t.Errorf("scheduler location left after kill: %v", err)
			}
			if matches, _ := filepath.Glob(filepath.Join(c.home, "repository", "topologies", c.name, "*", "wordcount", "*")); len(matches) > 0 {
				t.Errorf("package left after kill: %v", matches)
			}
			// A second kill finds nothing left to stop (exit 0 with
			// --ignore-not-found).
			if out := c.mustEgret("kill", c.name, "wordcount", "--ignore-not-found"); !strings.Contains(out, "nothing left to stop") {
				t.Errorf("second kill: %q", out)
			}
		})
	}
}
