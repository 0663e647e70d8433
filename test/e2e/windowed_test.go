package e2e

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/egret-stream/egret/examples/windowed/windowed"
)

// TestWindowedAcrossTwoContainers submits the event-time windowed word
// count to a local cluster of two containers — spout, window bolts and
// report bolt spread over both, so data and the in-band watermarks cross
// stream managers — and waits until the report holds exactly the final
// counts and late words of the reference model.
func TestWindowedAcrossTwoContainers(t *testing.T) {
	const words = 20000
	c := newCluster(t, "local")
	reports := t.TempDir()
	c.mustEgret("submit", c.name, binary(t, "windowed"), "--", "--containers", "2", "--words", "20000", "--report-dir", reports)
	finals, late := windowed.Expected(windowed.Options{Words: words})
	sort.Strings(late)
	var got, gotLate []string
	waitFor(t, "the report to hold every final window count", 3*time.Minute, func() bool {
		got, gotLate = nil, nil
		files, _ := filepath.Glob(filepath.Join(reports, "report-*.txt"))
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				return false
			}
			for _, l := range strings.Split(string(b), "\n") {
				if rest, ok := strings.CutPrefix(l, "final "); ok {
					got = append(got, rest)
				} else if rest, ok := strings.CutPrefix(l, "late "); ok {
					gotLate = append(gotLate, rest)
				}
			}
		}
		return len(got) >= len(finals)
	})
	seen := map[string]bool{}
	for _, g := range got {
		if !finals[g] || seen[g] {
			t.Errorf("final %q: not in the model, or twice", g)
		}
		seen[g] = true
	}
	if len(got) != len(finals) {
		t.Errorf("%d final results, the model has %d", len(got), len(finals))
	}
	sort.Strings(gotLate)
	if strings.Join(gotLate, ",") != strings.Join(late, ",") {
		t.Errorf("late words: got %d, model %d", len(gotLate), len(late))
	}
	pp, _, err := c.store().PackingPlan(t.Context(), "windowed")
	if err != nil || len(pp.Containers) != 2 {
		t.Fatalf("packing plan: %v, want 2 containers", err)
	}
	// The data and the watermarks crossed stream managers only if a
	// window task runs in another container than the spout.
	where := map[string][]int{}
	for _, ct := range pp.Containers {
		for _, in := range ct.Instances {
			where[in.Component] = append(where[in.Component], ct.ID)
		}
	}
	crossed := false
	for _, id := range where["count"] {
		crossed = crossed || id != where["words"][0]
	}
	if !crossed {
		t.Errorf("no window task in another container than the spout: %v", where)
	}
	c.mustEgret("kill", c.name, "windowed")
	c.waitGone(t)
}
