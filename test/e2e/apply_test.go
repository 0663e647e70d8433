package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// applyManifest writes a manifest of ackcheck topologies: name → extra
// YAML lines of the entry.
func applyManifest(t *testing.T, c *cluster, file string, entries map[string]string) {
	t.Helper()
	applyManifestBinaries(t, c, file, entries, nil, nil)
}

// applyManifestBinaries is applyManifest with other binaries (names for
// binary()) than ackcheck for some entries, and more arguments (YAML list
// items) for some.
func applyManifestBinaries(t *testing.T, c *cluster, file string, entries, binaries, args map[string]string) {
	t.Helper()
	var b strings.Builder
	b.WriteString("topologies:\n")
	for _, name := range []string{"app-a", "app-b", "app-c"} {
		extra, ok := entries[name]
		if !ok {
			continue
		}
		bin := "ackcheck"
		if b, ok := binaries[name]; ok {
			bin = b
		}
		more := ""
		if a, ok := args[name]; ok {
			more = ", " + a
		}
		fmt.Fprintf(&b, "  - name: %s\n    cluster: %s\n    binary: %s\n    args: [--name, %s, --messages, \"0\", --rate, \"50\", --state, %s, --containers, \"1\"%s]\n%s",
			name, c.name, binary(t, bin), name, filepath.Join(c.home, "state-"+name), more, extra)
	}
	if err := os.WriteFile(file, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

type applyResult struct {
	Steps []struct {
		Topology, Action, Status, Detail, Error string
	}
	Failed int
}

func (c *cluster) apply(t *testing.T, args ...string) applyResult {
	t.Helper()
	out := c.mustEgret(append([]string{"apply", "-o", "json"}, args...)...)
	var r applyResult
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("apply output: %v\n%s", err, out)
	}
	return r
}

func (r applyResult) actions() map[string]string {
	out := map[string]string{}
	for _, s := range r.Steps {
		out[s.Topology] = s.Action + "/" + s.Status
	}
	return out
}

func sameActions(t *testing.T, what string, got applyResult, want map[string]string) {
	t.Helper()
	a := got.actions()
	if len(a) != len(want) {
		t.Fatalf("%s: steps %v, want %v", what, a, want)
	}
	for k, v := range want {
		if a[k] != v {
			t.Fatalf("%s: steps %v, want %v", what, a, want)
		}
	}
}

// TestApplyManifest: egret apply creates what a manifest lists, changes
// nothing the second time, scales and prunes for a changed manifest,
// upgrades a topology whose binary changed (another digest), and
// refuses a bad manifest with its position before doing anything.
func TestApplyManifest(t *testing.T) {
	c := newCluster(t, "local")
	dir := t.TempDir()
	file := filepath.Join(dir, "topologies.yaml")
	applyManifest(t, c, file, map[string]string{"app-a": "", "app-b": "    parallelism: {relay: 2}\n", "app-c": ""})

	sameActions(t, "dry run", c.apply(t, "-f", file, "--dry-run"),
		map[string]string{"app-a": "create/planned", "app-b": "create/planned", "app-c": "create/planned"})
	if out := c.mustEgret("list", c.name); strings.Contains(out, "app-") {
		t.Fatalf("a dry run submitted:\n%s", out)
	}

	sameActions(t, "first apply", c.apply(t, "-f", file, "--parallel", "2"),
		map[string]string{"app-a": "create/ok", "app-b": "create/ok", "app-c": "create/ok"})
	relays := func(name string) int {
		pp, _, err := c.store().PackingPlan(context.Background(), name)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, ct := range pp.Containers {
			for _, in := range ct.Instances {
				if in.Component == "relay" {
					n++
				}
			}
		}
		return n
	}
	if n := relays("app-b"); n != 2 {
		t.Fatalf("app-b has %d relay tasks, want the manifest's 2", n)
	}

	sameActions(t, "second apply", c.apply(t, "-f", file),
		map[string]string{"app-a": "unchanged/ok", "app-b": "unchanged/ok", "app-c": "unchanged/ok"})

	// app-c leaves the manifest, app-b scales up.
	applyManifest(t, c, file, map[string]string{"app-a": "", "app-b": "    parallelism: {relay: 3}\n"})
	sameActions(t, "changed manifest without --prune", c.apply(t, "-f", file, "--dry-run"),
		map[string]string{"app-a": "unchanged/planned", "app-b": "update/planned"})
	r := c.apply(t, "-f", file, "--prune")
	sameActions(t, "changed manifest", r, map[string]string{"app-a": "unchanged/ok", "app-b": "update/ok", "app-c": "kill/ok"})
	if n := relays("app-b"); n != 3 {
		t.Fatalf("app-b has %d relay tasks after the update, want 3", n)
	}
	if out := c.mustEgret("list", c.name); strings.Contains(out, "app-c") || !strings.Contains(out, "app-a") {
		t.Fatalf("after the prune:\n%s", out)
	}

	// app-a's binary changes (another build), and app-b's scale with
	// app-b's binary: an upgrade each, app-b's followed by the update.
	v2 := taggedAckcheck(t, "v2")
	applyManifestBinaries(t, c, file, map[string]string{"app-a": "", "app-b": "    parallelism: {relay: 2}\n"}, map[string]string{"app-a": v2, "app-b": v2}, nil)
	dry := c.apply(t, "-f", file, "--dry-run")
	sameActions(t, "changed binaries, dry run", dry, map[string]string{"app-a": "upgrade/planned", "app-b": "upgrade/planned"})
	for _, s := range dry.Steps {
		if !strings.Contains(s.Detail, "binary ") || !strings.Contains(s.Detail, "(a rolling upgrade)") || (s.Topology == "app-b" && !strings.Contains(s.Detail, "then relay 3→2")) {
			t.Errorf("the planned upgrade of %s says %q; want the binary digests (and app-b's scale)", s.Topology, s.Detail)
		}
	}
	es, err := c.store().ExecutionState(context.Background(), "app-a")
	if err != nil {
		t.Fatal(err)
	}
	if es.GetCurrentPackage() != nil || es.GetPackageBinarySha256() == "" {
		t.Fatalf("the dry run changed app-a's execution state, or the submit did not record the binary's digest: %v", es)
	}
	sameActions(t, "changed binaries", c.apply(t, "-f", file), map[string]string{"app-a": "upgrade/ok", "app-b": "upgrade/ok"})
	if n := relays("app-b"); n != 2 {
		t.Fatalf("app-b has %d relay tasks after the upgrade and update, want 2", n)
	}
	if es, err = c.store().ExecutionState(context.Background(), "app-a"); err != nil {
		t.Fatal(err)
	}
	if got, was := es.GetCurrentPackage().GetBinarySha256(), es.GetPackageBinarySha256(); got == "" || got == was {
		t.Fatalf("after the upgrade app-a's package records binary %q (submitted: %q)", got, was)
	}
	sameActions(t, "the upgraded manifest again", c.apply(t, "-f", file), map[string]string{"app-a": "unchanged/ok", "app-b": "unchanged/ok"})
	// Other arguments that change a setting: reported, not applied.
	applyManifestBinaries(t, c, file, map[string]string{"app-a": "", "app-b": "    parallelism: {relay: 2}\n"}, map[string]string{"app-a": v2, "app-b": v2},
		map[string]string{"app-a": "--set, topology.debug=true"})
	r = c.apply(t, "-f", file, "--dry-run")
	sameActions(t, "changed arguments", r, map[string]string{"app-a": "unchanged/planned", "app-b": "unchanged/planned"})
	if d := r.Steps[0].Detail; r.Steps[0].Topology != "app-a" || !strings.Contains(d, "settings topology.debug differ from the running definition") {
		t.Errorf("the changed setting of app-a is not reported: %+v", r.Steps)
	}

	// A bad manifest: exit 2 naming file and line, nothing done.
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte("topologies:\n  - name: app-d\n    cluster: "+c.name+"\n    binary: ./x\n    replicas: 3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, stderr, code := c.egret("apply", "-f", bad); code != 2 || !strings.Contains(stderr, bad+`:5: unknown key "replicas"`) {
		t.Fatalf("bad manifest: exit %d, %q", code, stderr)
	}
	// A binary that defines another name than listed: the step fails, nothing runs.
	wrong := filepath.Join(dir, "wrong.yaml")
	if err := os.WriteFile(wrong, []byte("topologies:\n  - name: app-e\n    cluster: "+c.name+"\n    binary: "+binary(t, "wordcount")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, _, code := c.egret("apply", "-f", wrong); code != 1 || !strings.Contains(out, `defines topology "wordcount", not "app-e"`) {
		t.Fatalf("a binary of another name: exit %d\n%s", code, out)
	}
	if out := c.mustEgret("list", c.name); strings.Contains(out, "wordcount") {
		t.Fatalf("the misnamed binary was submitted:\n%s", out)
	}
	c.killAll()
	c.waitGone(t)
}
