package main

import (
	"maps"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/egret-stream/egret/examples/internal/exampletest"
)

// TestStreamletWordCountOnARealProcess runs the binary with --local, fused
// and unfused, and waits until the windowed counts of every word add up
// to what the bounded sources emitted.
func TestStreamletWordCountOnARealProcess(t *testing.T) {
	const sentences = 500
	want := map[string]int64{}
	for task := 0; task < 2; task++ {
		for j := 0; j < sentences; j++ {
			for _, w := range strings.Fields(Sentences[(task+j)%len(Sentences)]) {
				want[strings.ToLower(w)]++
			}
		}
	}
	bin := exampletest.Build(t, ".")
	for _, separate := range []bool{false, true} {
		t.Run("separate="+strconv.FormatBool(separate), func(t *testing.T) {
			args := []string{"--sentences", strconv.Itoa(sentences), "--window", "100ms", "--local"}
			if separate {
				args = append(args, "--separate")
			}
			p := exampletest.Start(t, bin, args...)
			var got map[string]int64
			p.WaitFor("the counts of every word", time.Minute, func(lines []string) bool {
				got = map[string]int64{}
				for _, l := range exampletest.Prefixed(lines, "count ") {
					f := strings.Fields(l)
					n, _ := strconv.ParseInt(f[1], 10, 64)
					got[f[0]] += n
				}
				return maps.Equal(got, want)
			})
			lines := p.Stop()
			summary := strings.Join(lines, "\n")
			fused := "sentences_split_nonempty_lower_by-word"
			if separate == strings.Contains(summary, fused) {
				t.Errorf("separate=%v: the summary should list the fused component %q only when fusing:\n%s", separate, fused, summary)
			}
		})
	}
}
