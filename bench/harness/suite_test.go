package harness

import (
	"context"
	"encoding/binary"
	"math"
	"strings"
	"testing"
	"time"
)

func TestCountFramesAcrossReads(t *testing.T) {
	batch := frameBatch(100, 1000) // 10 frames
	var carry []byte
	var total int64
	// Split the stream at awkward places: inside a length and a payload.
	for _, cut := range [][2]int{{0, 2}, {2, 150}, {150, 999}, {999, 1000}} {
		n, c := countFrames(carry, batch[cut[0]:cut[1]])
		total, carry = total+n, c
	}
	if total != 10 || len(carry) != 0 {
		t.Errorf("counted %d frames, %d bytes left; want 10 and 0", total, len(carry))
	}
	if got := binary.BigEndian.Uint32(batch[100:]); got != 96 {
		t.Errorf("frame length %d, want 96", got)
	}
}

func TestCalibrationMeasuresEveryTransport(t *testing.T) {
	c, err := RunCalibration(context.Background(), CalibrationOptions{Duration: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{CalibrationTCP, CalibrationUnix, CalibrationChannel} {
		tr, ok := c.Get(name)
		if !ok || tr.FramesPerSec <= 0 || math.Abs(tr.BytesPerSec-tr.FramesPerSec*100) > 1e-6*tr.BytesPerSec {
			t.Errorf("%s: %+v (found %v)", name, tr, ok)
		}
	}
	if _, err := RunCalibration(context.Background(), CalibrationOptions{FrameBytes: 4}); err == nil {
		t.Error("4-byte frames: want an error")
	}
}

func TestWithRate(t *testing.T) {
	w := SentenceWordCount("/bin/x", 1, 0)
	if w.OfferedRate != 0 || strings.Contains(strings.Join(w.Args, " "), "--rate") {
		t.Errorf("unthrottled: %+v", w)
	}
	r := w.WithRate(1234.4)
	if r.OfferedRate != 1234 || !strings.HasSuffix(strings.Join(r.Args, " "), "--rate 1234") {
		t.Errorf("with rate: %v %v", r.OfferedRate, r.Args)
	}
	if strings.Contains(strings.Join(w.Args, " "), "--rate") {
		t.Error("WithRate changed the original's arguments")
	}
	if a := ConstNull("/bin/x", 2, 1, 1, 1000); !a.Acking || !a.WantCross || !strings.Contains(strings.Join(a.Args, " "), "--acking --max-pending 1000") {
		t.Errorf("acking T1: %+v", a)
	}
}

func TestEvaluateTargets(t *testing.T) {
	ok := &ClusterResult{Name: "t1-constnull-2c-quick", Summary: map[string]Stat{"tuples_per_cpu_second": {Median: 3.5e6, N: 1}}}
	low := &ClusterResult{Name: "t3-sentencewc-max", Summary: map[string]Stat{"tuples_per_cpu_second": {Median: 1e5, N: 3}}}
	failed := &ClusterResult{Name: "t1-constnull-2c-ack1000", Error: "submit failed\nmore"}
	lat := &ClusterResult{Name: "t3-sentencewc-50pct", Latency: map[string]LatencyStat{"count": {P99: Stat{Median: 4, N: 3}}}}
	r := &Report{Cluster: []*ClusterResult{ok, low, failed, lat},
		External: []ExternalSection{{Group: "T4", Result: &ExternalResult{Targets: []Target{{Name: "T4 slope", Measured: true, Met: true}}}}}}
	got := map[string]string{}
	for _, tg := range r.EvaluateTargets() {
		got[tg.Bench] = tg.Status()
		if tg.Bench == "t1-constnull-2c-ack1000" && tg.Note != "not measured: submit failed" {
			t.Errorf("note %q", tg.Note)
		}
	}
	want := map[string]string{"t1-constnull-2c-quick": "met", "t3-sentencewc-max": "missed", "t1-constnull-2c-ack1000": "not measured",
		"t1-constnull-2c-ack10000": "not measured", "t3-sentencewc-50pct": "met", "": "met"}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%q: %q, want %q (all: %v)", k, got[k], v, got)
		}
	}
	var b strings.Builder
	r.Targets = r.EvaluateTargets()
	r.Reserved = map[string]string{"T5": "bench/recovery"}
	if err := r.WriteMarkdown(&b); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"| T1 across 2 containers, acking off | t1-constnull-2c-quick | tuples per CPU-second | ≥ 3 M | 3.5 M | **met** |",
		"not measured: submit failed", "### T5 Recovery\n\nNot in this run: built in `bench/recovery`"} {
		if !strings.Contains(b.String(), s) {
			t.Errorf("markdown lacks %q:\n%s", s, b.String())
		}
	}
}
