package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/egret-stream/egret/core/names"
	"github.com/egret-stream/egret/core/state"
	"github.com/egret-stream/egret/internal/treehash"
	"github.com/egret-stream/egret/internal/zktest"
)

func init() { packages["named"] = "./test/e2e/testdata/named" }

// hostileTopologyNames are topology names that every command must refuse
// (a NUL byte cannot be passed on a command line; core/names and the
// launcher's unit tests cover it).
var hostileTopologyNames = []string{
	"", " ", ".", "..", "../x", "../../../..", "a/b", "/abs", "%2e%2e", "a b", "a\tb", "wc.1",
	"a\uff0fb",     // fullwidth solidus
	"\u2024\u2024", // one dot leaders
	"\uff0e\uff0e", // fullwidth full stops
	strings.Repeat("a", 300),
}

func TestHostileNamesLocal(t *testing.T) {
	hostileNames(t, newCluster(t, "local"))
}

func TestHostileNamesLocalZooKeeper(t *testing.T) {
	addr := zktest.Start(t)
	c := newCluster(t, "localzk", "egret.statemgr.connection.string="+addr, "egret.statemgr.session.timeout=5s")
	c.zk = addr
	hostileNames(t, c)
}

// hostileNames runs every command with hostile topology names, cluster
// arguments, container indices and user names, and asserts that each
// exits 2 with a line naming the rule, and that nothing changed: no file
// under a temporary $HOME holding EGRET_HOME (so that "../../../.." from a
// working directory lands in it), no state node, no process.
func hostileNames(t *testing.T, c *cluster) {
	root := c.home // removed by the cluster's cleanup
	home := filepath.Join(root, "home")
	c.home = filepath.Join(home, ".egret")
	c.env = []string{"HOME=" + home, "USER=tester", "LOGNAME=tester"}

	// What a careless command could destroy: another topology's working
	// directory and package, its state, and the user's own files.
	for _, f := range []string{
		filepath.Join(home, "precious.txt"),
		filepath.Join(c.home, "topologies", c.name, "tester", "victim", "container-1", "logs", "instance-count-1.log"),
		filepath.Join(c.home, "repository", "topologies", c.name, "tester", "victim", "victim-tester-0123456789ab.tar.gz"),
	} {
		if err := os.MkdirAll(filepath.Dir(f), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(f, []byte("keep me"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	sm := c.stateManager()
	if err := sm.Create(context.Background(), state.Path(state.TopologiesDir, "victim"), []byte("victim"), false); err != nil {
		t.Fatal(err)
	}
	sm.Close()
	files, nodes := snapshot(t, c, root)

	check := func(what string, oneLine bool, rule string, args ...string) {
		t.Helper()
		_, stderr, code := c.egret(args...)
		if code != 2 {
			t.Errorf("%s: exit code %d, want 2; stderr:\n%s", what, code, stderr)
		}
		if lines := strings.Split(strings.TrimSpace(stderr), "\n"); oneLine && len(lines) != 1 {
			t.Errorf("%s: %d lines on stderr, want one:\n%s", what, len(lines), stderr)
		}
		if !strings.Contains(stderr, rule) {
			t.Errorf("%s: stderr does not state the rule %q:\n%s", what, rule, stderr)
		}
	}
	named := binary(t, "named")
	for _, name := range hostileTopologyNames {
		rule := names.Topology.Rule()
		for _, cmd := range [][]string{
			{"kill", c.name, name},
			{"activate", c.name, name},
			{"deactivate", c.name, name},
			{"restart", c.name, name},
			{"restart", c.name, name, "1"},
			{"update", c.name, name, "--container-number", "2"},
			{"update", c.name, name, "--runtime-config", "k=v"},
			{"metrics", c.name, name},
			{"logs", c.name, name},
			{"logs", c.name, name, "count:1", "-f"},
			{"loglevel", c.name, name, "debug"},
		} {
			check(fmt.Sprintf("%s %q", cmd[0], name), true, rule, cmd...)
		}
		// The topology binary defines its name; it is checked with the
		// same rule (the binary's own report may take more lines).
		check(fmt.Sprintf("submit %q", name), false, rule, "submit", c.name, named, "--", "--name", name)
	}
	for _, arg := range []string{c.name + "/..", "../" + c.name, c.name + "/../x", c.name + "/a b", c.name + "/r/\u2024\u2024",
		c.name + "/a\uff0fb", c.name + "/" + strings.Repeat("r", 300), c.name + "/%2e%2e", c.name + "//prod"} {
		for _, cmd := range [][]string{
			{"kill", arg, "wordcount"}, {"activate", arg, "wordcount"}, {"deactivate", arg, "wordcount"},
			{"restart", arg, "wordcount"}, {"update", arg, "wordcount", "--container-number", "2"},
			{"metrics", arg, "wordcount"}, {"list", arg}, {"submit", arg, named},
			{"logs", arg, "wordcount", "count"}, {"loglevel", arg, "wordcount", "debug"},
		} {
			check(fmt.Sprintf("%s %q", cmd[0], arg), true, "must start with a letter or digit", cmd...)
		}
	}
	for _, container := range []string{"-1", "+1", "1/../..", "..", "0x1", "1 ", "\uff11", "99999999999"} {
		check(fmt.Sprintf("restart container %q", container), true, "decimal digits only", "restart", c.name, "wordcount", "--", container)
	}
	// The role defaults to the user name, which becomes part of paths.
	for _, user := range []string{"..", "../..", "a/b", "a b"} {
		c.env = []string{"HOME=" + home, "USER=" + user, "LOGNAME=" + user}
		for _, cmd := range [][]string{{"kill", c.name, "victim"}, {"list", c.name}, {"submit", c.name, named}} {
			check(fmt.Sprintf("%s as user %q", cmd[0], user), true, names.Role.Rule(), cmd...)
		}
	}
	c.env = []string{"HOME=" + home, "USER=tester", "LOGNAME=tester"}

	filesAfter, nodesAfter := snapshot(t, c, root)
	if d := files.Diff(filesAfter); d != nil {
		t.Errorf("commands with hostile names changed files under %s:\n%s", root, strings.Join(d, "\n"))
	}
	if nodes != nodesAfter {
		t.Errorf("commands with hostile names changed the state:\nbefore:\n%s\nafter:\n%s", nodes, nodesAfter)
	}
	if p := c.processes(); len(p) > 0 {
		t.Errorf("commands with hostile names left processes behind: %v", p)
	}
}

// snapshot records the files under root and the cluster's state tree.
func snapshot(t *testing.T, c *cluster, root string) (treehash.Tree, string) {
	t.Helper()
	sm := c.stateManager()
	var lines []string
	var walk func(p string)
	walk = func(p string) {
		n, err := sm.Get(context.Background(), p)
		if err != nil {
			t.Fatalf("read state node %s: %v", p, err)
		}
		lines = append(lines, fmt.Sprintf("%s v%d %q", p, n.Version, n.Data))
		kids, err := sm.Children(context.Background(), p)
		if err != nil {
			t.Fatalf("list state node %s: %v", p, err)
		}
		for _, k := range kids {
			if p == "/" {
				walk("/" + k)
			} else {
				walk(p + "/" + k)
			}
		}
	}
	walk("/")
	sm.Close() // before hashing: a localfs session keeps a lease file
	sort.Strings(lines)
	files, err := treehash.Of(root)
	if err != nil {
		t.Fatal(err)
	}
	return files, strings.Join(lines, "\n")
}
