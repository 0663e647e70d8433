package backpressure

import (
	"bytes"
	"math"
	"strings"
	"testing"
)

func TestSummarizeSlopeAndRates(t *testing.T) {
	r := &Result{Kinds: map[string]KindSummary{}}
	// stmgr grows 2 MiB per minute after 60s; the instance is flat.
	for i := 0; i <= 10; i++ {
		sec := float64(i * 30)
		r.Samples = append(r.Samples, Sample{
			Seconds:  sec,
			RSSMiB:   map[string]float64{"stmgr": 20 + 2*sec/60, "instance:slow": 30},
			Emitted:  int64(1000 * sec),
			Executed: int64(990 * sec),
		})
	}
	r.Samples = append(r.Samples, Sample{Seconds: 400, RSSMiB: map[string]float64{"stmgr": 500}})
	r.summarize(11, 60)
	if got := r.Kinds["stmgr"].SlopeMiBPerMin; math.Abs(got-2) > 1e-9 {
		t.Errorf("stmgr slope = %v, want 2", got)
	}
	if got := r.Kinds["instance:slow"].SlopeMiBPerMin; got != 0 {
		t.Errorf("flat slope = %v", got)
	}
	if s := r.Kinds["stmgr"]; s.Max != 30 || s.Min != 20 || s.N != 11 {
		t.Errorf("stmgr stat = %+v: the release samples must not count", s)
	}
	if r.EmitPerSec != 1000 || r.ExecutePerSec != 990 {
		t.Errorf("rates = %v, %v", r.EmitPerSec, r.ExecutePerSec)
	}
	r.EngageSeconds, r.ReleaseSeconds = 0.5, -1
	var b bytes.Buffer
	if err := r.WriteMarkdown(&b); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"| stmgr | 20.0 | 25.0 | 30.0 | +2.00 |", "| time to engage back pressure | 0.5s |", "| time to release it (bolt unlimited) | not observed |"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, b.String())
		}
	}
}
