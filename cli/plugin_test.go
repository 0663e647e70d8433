package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The exit codes of egret plugin verify for bad input; the e2e test
// TestPluginVerify runs real plugins.
func TestPluginVerifyBadInput(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(dir, "egret-statemgr-exits")
	if err := os.WriteFile(script, []byte("#!/bin/sh\nexit 3\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args    []string
		mention string
	}{
		{[]string{"plugin", "verify"}, "verify needs 1 arguments"},
		{[]string{"plugin", "verify", filepath.Join(dir, "egret-scheduler-none")}, "no such file"},
		{[]string{"plugin", "verify", script, "--kind", "sink"}, `unknown plugin kind "sink"`},
		{[]string{"plugin", "verify", script, "--config-property", "novalue"}, `"novalue" is not key=value`},
		{[]string{"plugin", "verify", script, "--config", filepath.Join(dir, "none.yaml")}, "none.yaml"},
		{[]string{"plugin", "verify", script}, "is it an Egret statemgr plugin"},
	} {
		code, stdout, stderr := egret(t, tc.args...)
		if code != ExitUsage || !strings.Contains(stderr, tc.mention) || strings.Count(stderr, "\n") != 1 {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 2 and one line mentioning %q", tc.args, code, stdout, stderr, tc.mention)
		}
	}
}
