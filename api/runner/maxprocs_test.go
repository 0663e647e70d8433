package runner

import (
	"os"
	"runtime"
	"testing"

	"github.com/egret-stream/egret/core/spi"
)

// TestSetMaxProcs: egret.instance.gomaxprocs sets GOMAXPROCS of an
// instance unless the environment does.
func TestSetMaxProcs(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	t.Setenv("GOMAXPROCS", "")
	os.Unsetenv("GOMAXPROCS")
	runtime.GOMAXPROCS(4)
	if err := setMaxProcs(spi.Config{KeyInstanceMaxProcs: "1"}); err != nil || runtime.GOMAXPROCS(0) != 1 {
		t.Errorf("gomaxprocs 1: GOMAXPROCS %d, %v", runtime.GOMAXPROCS(0), err)
	}
	runtime.GOMAXPROCS(4)
	if err := setMaxProcs(spi.Config{KeyInstanceMaxProcs: "0"}); err != nil || runtime.GOMAXPROCS(0) != 4 {
		t.Errorf("gomaxprocs 0 changed GOMAXPROCS to %d (%v)", runtime.GOMAXPROCS(0), err)
	}
	t.Setenv("GOMAXPROCS", "4")
	if err := setMaxProcs(spi.Config{KeyInstanceMaxProcs: "1"}); err != nil || runtime.GOMAXPROCS(0) != 4 {
		t.Errorf("the environment's GOMAXPROCS did not win: %d (%v)", runtime.GOMAXPROCS(0), err)
	}
	if err := setMaxProcs(spi.Config{KeyInstanceMaxProcs: "-1"}); err == nil {
		t.Error("-1 accepted")
	}
}
