package daemonlog

import (
	"bytes"
	"encoding/json"
	"testing"

	"go.uber.org/zap"
)

// TestJSONLines: one JSON object a line, with the fields every reader
// relies on.
func TestJSONLines(t *testing.T) {
	var b bytes.Buffer
	log := New(&b, zap.NewAtomicLevelAt(zap.InfoLevel))
	log.Named("instance").Info("subprocess started", zap.Int("subprocess_pid", 42))
	log.Debug("not at info")
	var m map[string]any
	if err := json.Unmarshal(bytes.TrimSpace(b.Bytes()), &m); err != nil {
		t.Fatalf("not one JSON line: %q: %v", b.String(), err)
	}
	for _, k := range []string{"ts", "level", "logger", "caller", "msg", "subprocess_pid"} {
		if _, ok := m[k]; !ok {
			t.Errorf("no %q in %v", k, m)
		}
	}
	if m["level"] != "info" || m["msg"] != "subprocess started" {
		t.Errorf("line %v", m)
	}
}
