package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestHealthMgrNeedsItsFlags: egret healthmgr without its topology or
// config is a usage error (exit 2), before any state manager is opened.
func TestHealthMgrNeedsItsFlags(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "cluster.json")
	if err := os.WriteFile(cfg, []byte(`{}`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"healthmgr", "--topology", "wc", "--topology-id", "wc-1"}, "needs --config"},
		{[]string{"healthmgr", "--topology", "wc", "--config", cfg}, "needs --topology and --topology-id"},
	} {
		code, _, stderr := egret(t, tc.args...)
		if code != ExitUsage || !strings.Contains(stderr, tc.want) {
			t.Errorf("egret %s: exit %d, %q; want %d with %q", strings.Join(tc.args, " "), code, stderr, ExitUsage, tc.want)
		}
	}
	// With its flags, a state manager that is not configured fails it.
	code, _, stderr := egret(t, "healthmgr", "--topology", "wc", "--topology-id", "wc-1", "--config", cfg)
	if code != ExitFailure || !strings.Contains(stderr, "egret.statemgr is not set") {
		t.Errorf("no state manager: exit %d, %q", code, stderr)
	}
}
