package main

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/egret-stream/egret/examples/internal/exampletest"
)

// TestFilterMapOnARealProcess runs the binary with --local, fused and
// unfused, and waits until it printed exactly the primes up to 2N with
// their squares.
func TestFilterMapOnARealProcess(t *testing.T) {
	const n = 2000
	var want []string
	for i := int64(1); i <= 2*n; i++ {
		if IsPrime(i) {
			want = append(want, fmt.Sprintf("%d %d", i, i*i))
		}
	}
	sort.Strings(want)
	bin := exampletest.Build(t, ".")
	for _, separate := range []bool{false, true} {
		t.Run("separate="+strconv.FormatBool(separate), func(t *testing.T) {
			args := []string{"--numbers", strconv.Itoa(n), "--local"}
			if separate {
				args = append(args, "--separate")
			}
			p := exampletest.Start(t, bin, args...)
			p.WaitFor("every prime", time.Minute, func(lines []string) bool {
				return len(exampletest.Prefixed(lines, "prime ")) >= len(want)
			})
			lines := p.Stop()
			got := exampletest.Prefixed(lines, "prime ")
			sort.Strings(got)
			if strings.Join(got, ",") != strings.Join(want, ",") {
				t.Errorf("got %d primes, want %d", len(got), len(want))
			}
			wantComponents := "numbers_primes_square_format"
			if separate {
				wantComponents = "format"
			}
			if !strings.Contains(strings.Join(lines, "\n"), wantComponents) {
				t.Errorf("summary does not list %q", wantComponents)
			}
		})
	}
}
