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
	for _, step := range []string{"defining", "packing", "uploading", "writing topology state", "launching", "is running"} {
		if !strings.Contains(out, step) {
			t.Errorf("submit printed no %q progress line:\n%s", step, out)
		}
	}
	return reports
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
			// kill is idempotent.
			c.mustEgret("kill", c.name, "wordcount")
		})
	}
}
