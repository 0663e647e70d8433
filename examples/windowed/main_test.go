package main

import (
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/egret-stream/egret/examples/internal/exampletest"
	"github.com/egret-stream/egret/examples/windowed/windowed"
)

// TestWindowedWordCountOnARealProcess runs the example binary with
// --local and waits until it printed exactly the final counts and late
// words of the reference model, for tumbling and sliding windows.
func TestWindowedWordCountOnARealProcess(t *testing.T) {
	bin := exampletest.Build(t, ".")
	for _, c := range []struct {
		name string
		o    windowed.Options
		args []string
	}{
		{"tumbling", windowed.Options{Words: 20000}, []string{"--words", "20000"}},
		{"sliding", windowed.Options{Words: 5000, Window: 2 * time.Second, Slide: 500 * time.Millisecond}, []string{"--words", "5000", "--window", "2s", "--slide", "500ms"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			finals, late := windowed.Expected(c.o)
			sort.Strings(late)
			p := exampletest.Start(t, bin, append(c.args, "--local")...)
			p.WaitFor("every final window count", 2*time.Minute, func(lines []string) bool {
				return len(exampletest.Prefixed(lines, "final ")) >= len(finals)
			})
			lines := p.Stop()
			got := exampletest.Prefixed(lines, "final ")
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
			gotLate := exampletest.Prefixed(lines, "late ")
			sort.Strings(gotLate)
			if strings.Join(gotLate, ",") != strings.Join(late, ",") {
				t.Errorf("late words: got %d, model %d\n got %.300v\nwant %.300v", len(gotLate), len(late), gotLate, late)
			}
			t.Logf("%d windows × words, %d late words", len(finals), len(late))
		})
	}
}
