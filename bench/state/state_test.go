package state

import (
	"testing"
)

// TestRun measures small states on both backends: every figure is
// there, the incremental checkpoint uploads less than the full one, and
// the restored state equals the state (Run checks it).
func TestRun(t *testing.T) {
	res, err := Run(t.Context(), Options{Dir: t.TempDir(), Updates: 2000, Cases: []Case{
		{Backend: "heap", Bytes: 2 << 20, ValueBytes: 512},
		{Backend: "pebble", Bytes: 24 << 20, ValueBytes: 512},
	}})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res {
		t.Logf("%+v", r)
		if r.Keys != int(r.Bytes)/r.ValueBytes || r.UpdatesPerCPUSecond <= 0 || r.FullBytes < r.Bytes || r.RestoreMs <= 0 || r.P99BetweenUs <= 0 {
			t.Errorf("%s: %+v", r.Backend, r)
		}
		if r.Backend == "pebble" && r.IncrUploaded*2 > r.IncrFull {
			t.Errorf("pebble: the checkpoint after 1%% of the keys changed uploaded %d of %d bytes", r.IncrUploaded, r.IncrFull)
		}
	}
}
