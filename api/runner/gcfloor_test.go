package runner

import (
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/egret-stream/egret/core/spi"
	"github.com/egret-stream/egret/examples/wordcount/wordcount"
)

func TestFloorPercent(t *testing.T) {
	const mib = 1 << 20
	for _, c := range []struct {
		name         string
		roots, floor uint64
		base, want   int
	}{
		{"small heap: the floor sets the growth", 4 * mib, 24 * mib, 100, 600},
		{"live above the floor: GOGC as is", 48 * mib, 24 * mib, 100, 100},
		{"live equal to the floor", 24 * mib, 24 * mib, 100, 100},
		{"a higher base wins", 4 * mib, 24 * mib, 800, 800},
		{"nearly empty heap: capped", 1024, 24 * mib, 100, maxFloorPercent},
		{"no cycle measured yet", 0, 24 * mib, 100, 100},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := floorPercent(c.roots, c.floor, c.base); got != c.want {
				t.Errorf("floorPercent(%d, %d, %d) = %d, want %d", c.roots, c.floor, c.base, got, c.want)
			}
		})
	}
}

var sink []byte

// churn allocates n bytes of short-lived garbage and returns the number
// of GC cycles that ran meanwhile.
func churn(n int) uint32 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range n / 256 {
		sink = make([]byte, 256)
	}
	sink = nil
	runtime.ReadMemStats(&after)
	return after.NumGC - before.NumGC
}

// TestHeapFloorMakesCyclesRare allocates the same garbage with and
// without a floor: with a 64 MiB floor a test binary's small heap is
// collected far less often, and stopping the floor restores the percent.
func TestHeapFloorMakesCyclesRare(t *testing.T) {
	if os.Getenv("GOGC") != "" {
		t.Skip("GOGC is set: the floor is off by design")
	}
	prev := debug.SetGCPercent(100)
	t.Cleanup(func() { debug.SetGCPercent(prev) })
	runtime.GC()
	const garbage = 512 << 20
	without := churn(garbage)

	stop := startHeapFloor(64 << 20)
	runtime.GC() // measures the live heap and sets the percent
	runtime.GC() // the finalizer of the first cycle ran by now
	with := churn(garbage)
	stop()

	t.Logf("GC cycles for %d MiB of garbage: %d without a floor, %d with a 64 MiB floor", garbage>>20, without, with)
	if with*4 > without {
		t.Errorf("with the floor %d cycles, without %d: want at most a quarter", with, without)
	}
	if p := debug.SetGCPercent(100); p != 100 {
		t.Errorf("after stop the GC percent is %d, want 100 restored", p)
	}
}

func TestHeapFloorRespectsGOGC(t *testing.T) {
	t.Setenv("GOGC", "100")
	prev := debug.SetGCPercent(100)
	t.Cleanup(func() { debug.SetGCPercent(prev) })
	stop := startHeapFloor(64 << 20)
	defer stop()
	runtime.GC()
	runtime.GC()
	if p := debug.SetGCPercent(100); p != 100 {
		t.Errorf("GOGC set: the percent is %d, want 100 untouched", p)
	}
}

// TestHeapFloorKey: egret.instance.heap.floor sets the floor (16 MiB when
// unset), and an instance or container process given a bad value exits 2
// with one line naming the key, before it connects to anything.
func TestHeapFloorKey(t *testing.T) {
	for _, tc := range []struct {
		value string
		want  uint64
	}{{"", DefaultHeapFloor}, {"64MiB", 64 << 20}, {"1048576", 1 << 20}} {
		c := spi.Config{}
		if tc.value != "" {
			c[KeyInstanceHeapFloor] = tc.value
		}
		if got, err := heapFloorOf(c); err != nil || got != tc.want {
			t.Errorf("%q: floor %d (%v), want %d", tc.value, got, err, tc.want)
		}
	}
	for _, bad := range []string{"0", "-1MiB", "lots", "2TiB"} {
		cfg := filepath.Join(t.TempDir(), "config.json")
		if err := os.WriteFile(cfg, []byte(`{"egret.instance.heap.floor": "`+bad+`"}`), 0o644); err != nil {
			t.Fatal(err)
		}
		shared := []string{"--container", "1", "--topology-id", "wc-1", "--stmgr-socket", filepath.Join(t.TempDir(), "none.sock"), "--config", cfg}
		for _, mode := range [][]string{
			{"--instance", "--task", "1"},
			{"--container-process", "--topology", "wordcount", "--tasks", "1", "--tmanager-location", filepath.Join(t.TempDir(), "tmanager-location")},
		} {
			code, stdout, stderr := runArgs(wordcount.Builder(wordcount.Options{}), append(mode, shared...)...)
			if code != ExitUsage || stdout != "" || !strings.Contains(stderr, KeyInstanceHeapFloor) || strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
				t.Errorf("%s with floor %q: exit %d, stderr %q; want exit %d and one line naming the key", mode[0], bad, code, stderr, ExitUsage)
			}
		}
	}
}
