package wire

import (
	"os"
	"runtime"
	"testing"
)

func TestProcessMetrics(t *testing.T) {
	runtime.GC()
	f, err := os.Open(os.Args[0]) // one more descriptor than before
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	got := map[string]float64{}
	for _, m := range ProcessMetrics() {
		got[m.GetName()] = m.GetValue()
	}
	if got["process.goroutines"] < 1 {
		t.Errorf("goroutines %v", got["process.goroutines"])
	}
	if got["process.gc.cycles"] < 1 || got["process.gc.pause.ns"] <= 0 {
		t.Errorf("after a collection: %v cycles, %v ns of pauses", got["process.gc.cycles"], got["process.gc.pause.ns"])
	}
	if runtime.GOOS != "linux" {
		return
	}
	if got["process.cpu.seconds"] < 0 || got["process.rss.bytes"] < 1<<20 || got["process.open.fds"] < 4 {
		t.Errorf("cpu %v s, rss %v bytes, %v open fds (stdin, stdout, stderr and the file at least)", got["process.cpu.seconds"], got["process.rss.bytes"], got["process.open.fds"])
	}
}
