package cli

import (
	"os"
	"strings"
	"testing"
)

// TestUpgradeArgumentsCheckedFirst: bad arguments of egret upgrade are
// refused (exit 2, one line) before any binary runs or any state is read.
func TestUpgradeArgumentsCheckedFirst(t *testing.T) {
	home, cp := isolate(t, nil)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"local"}, "upgrade needs a cluster, a topology and the new binary"},
		{[]string{"local", "wc"}, "upgrade needs the new topology binary or Go package (or --rollback)"},
		{[]string{"local", "wc", "./v2", "--rollback"}, "--rollback returns to the previous package and takes no binary"},
		{[]string{"local", "wc", "--rollback", "--canary", "1"}, "drop --containers and --canary"},
		{[]string{"local", "wc", "./v2", "--canary", "1", "--containers", "1"}, "--containers and --canary exclude each other"},
		{[]string{"local", "wc", "./v2", "--containers", "1,x"}, `--containers "1,x": want container ids separated by commas`},
		{[]string{"local", "wc", "./v2", "--containers", ""}, "--containers is empty"},
		{[]string{"local", "wc", "./v2", "--containers", "0"}, "container 0 runs the topology manager"},
		{[]string{"local", "wc", "./v2", "--containers", "2,2"}, "lists container 2 twice"},
		{[]string{"local", "wc", "./v2", "--canary", "-1"}, "--canary -1"},
		{[]string{"local", "wc", "./v2", "--wait-healthy", "0s"}, "--wait-healthy 0s must be positive"},
		{[]string{"local", "wc", "./v2", "--max-exceptions", "-1"}, "--max-exceptions -1 is negative"},
		{[]string{"local", "wc", "./v2", "--drain-timeout", "-1s"}, "--drain-timeout -1s is negative"},
		{[]string{"local", "wc", "./v2", "-o", "yaml"}, `--output "yaml"`},
		{[]string{"local", "../wc", "./v2"}, `topology name "../wc" is invalid`},
		{[]string{"local", "wc", "./no/such/binary"}, "topology binary ./no/such/binary does not exist"},
	} {
		code, _, stderr := egret(t, append(append([]string{"upgrade"}, tc.args...), "--config-path", cp)...)
		if code != ExitUsage || !strings.Contains(stderr, tc.want) || strings.Count(stderr, "\n") != 1 {
			t.Errorf("upgrade %s: exit %d, stderr %q; want exit 2 and one line with %q", strings.Join(tc.args, " "), code, stderr, tc.want)
		}
	}
	if entries, _ := os.ReadDir(home); len(entries) != 0 {
		t.Errorf("EGRET_HOME holds %v after refused upgrades", entries)
	}
}
