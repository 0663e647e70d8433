package stmgr

import (
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

// TestChangeLogRateLimited: a state flapping 1,000 times in 25 s is
// logged at INFO three times (at 0, 10 and 20 s), each line counting the
// changes logged at DEBUG only since the last.
func TestChangeLogRateLimited(t *testing.T) {
	core, logs := observer.New(zapcore.DebugLevel)
	l := zap.New(core)
	var c changeLog
	t0 := time.Unix(1000, 0)
	for i := range 1000 {
		c.log(l, t0.Add(time.Duration(i)*25*time.Millisecond), "back pressure state changed", zap.Bool("initiated", i%2 == 0))
	}
	info := logs.FilterLevelExact(zapcore.InfoLevel).All()
	if len(info) != 3 {
		t.Fatalf("%d INFO lines, want 3", len(info))
	}
	if n := info[1].ContextMap()["changes_since_last_info"]; n != int64(399) {
		t.Errorf("second INFO line counts %v changes not logged at INFO, want 399", n)
	}
	if d := logs.FilterLevelExact(zapcore.DebugLevel).Len(); d != 997 {
		t.Errorf("%d DEBUG lines, want 997", d)
	}
}
