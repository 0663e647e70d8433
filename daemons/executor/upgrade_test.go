package executor

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/egret-stream/egret/core/state"
	"github.com/egret-stream/egret/internal/fetch"
	"github.com/egret-stream/egret/proto/egretpb"
)

// upgradedPackage builds a second package of v whose definition reads
// "defn v2".
func upgradedPackage(t *testing.T, v *env) (string, string) {
	t.Helper()
	src := filepath.Join(v.base, "src2")
	if err := os.MkdirAll(src, 0o755); err != nil {
		t.Fatal(err)
	}
	mustWrite(t, filepath.Join(src, "topology.defn"), "defn v2", 0o644)
	pkg := filepath.Join(v.base, "topology-v2.tar.gz")
	sha, err := fetch.CreateTarGz(pkg, map[string]string{
		"topology":      filepath.Join(v.base, "src", "topology"),
		"topology.defn": filepath.Join(src, "topology.defn"),
		"cluster.json":  filepath.Join(v.base, "src", "cluster.json"),
	})
	if err != nil {
		t.Fatal(err)
	}
	return "file://" + pkg, sha
}

func (v *env) setExecutionState(es *egretpb.ExecutionState) {
	v.t.Helper()
	if err := state.New(v.sm).SetExecutionState(context.Background(), testTopology, es); err != nil {
		v.t.Fatal(err)
	}
}

// TestUpgradedPackage: a container the execution state gives another
// package (egret upgrade) runs that one; the others run their command
// line's; a restart with the record gone goes back to the command line's
// package (a new digest is fetched and extracted again).
func TestUpgradedPackage(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	v.setPlan(testPlan(map[int][]string{1: {"word:1"}, 2: {"word:2"}}))
	uri2, sha2 := upgradedPackage(t, v)
	base := &egretpb.PackageRef{Uri: "file://" + v.pkg, Sha256: v.sha}
	v.setExecutionState(&egretpb.ExecutionState{TopologyName: testTopology, TopologyId: testID,
		PackageUri: base.Uri, PackageSha256: base.Sha256, CurrentPackage: base,
		ContainerPackages: map[int32]*egretpb.PackageRef{1: {Uri: uri2, Sha256: sha2}}})
	defn := func(dir string) string {
		b, _ := os.ReadFile(filepath.Join(dir, "package", "topology.defn"))
		return string(b)
	}

	cfg := v.config(1)
	e, cancel, errc := v.run(cfg)
	waitFor(t, "the stream manager of container 1", func() bool { _, ok := statusOf(e, "stmgr"); return ok })
	if got := defn(v.work); got != "defn v2" {
		t.Errorf("container 1 runs the package with definition %q, want the upgraded one", got)
	}
	if got := readMarker(filepath.Join(v.work, "package.sha256")); got != sha2 {
		t.Errorf("marker %q, want %q", got, sha2)
	}
	cancel()
	if err := waitErr(t, errc); err != nil {
		t.Fatal(err)
	}

	// Rolled back: the record is gone, the next start fetches the command
	// line's package again.
	v.setExecutionState(&egretpb.ExecutionState{TopologyName: testTopology, TopologyId: testID,
		PackageUri: base.Uri, PackageSha256: base.Sha256, CurrentPackage: base})
	e, cancel, errc = v.run(cfg)
	waitFor(t, "the stream manager of container 1 again", func() bool { _, ok := statusOf(e, "stmgr"); return ok })
	if got := defn(v.work); got != "defn" {
		t.Errorf("after the rollback container 1 runs the package with definition %q, want the submitted one", got)
	}
	cancel()
	if err := waitErr(t, errc); err != nil {
		t.Fatal(err)
	}
}

// TestBadUpgradeRecord: a record without a digest stops the executor with
// an error that names the container, before anything starts.
func TestBadUpgradeRecord(t *testing.T) {
	t.Parallel()
	v := newEnv(t)
	v.setPlan(testPlan(map[int][]string{1: {"word:1"}}))
	v.setExecutionState(&egretpb.ExecutionState{TopologyName: testTopology, TopologyId: testID,
		ContainerPackages: map[int32]*egretpb.PackageRef{1: {Uri: "file:///nowhere.tar.gz"}}})
	e, _, errc := v.run(v.config(1))
	err := waitErr(t, errc)
	if err == nil || !strings.Contains(err.Error(), "gives container 1 a package without URI or digest") {
		t.Fatalf("Run = %v, want the bad record named", err)
	}
	if len(e.Status()) != 0 {
		t.Error("processes started")
	}
}
