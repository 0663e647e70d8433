package kubernetes

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/egret-stream/egret/conf"
	// The other backends the kubernetes cluster selects, whose keys its
	// files set (the catalog imports this package, so it cannot be used).
	_ "github.com/egret-stream/egret/checkpoints/localfs"
	_ "github.com/egret-stream/egret/daemons/metricsmgr"
	_ "github.com/egret-stream/egret/packing/roundrobin"
	_ "github.com/egret-stream/egret/statemgr/zookeeper"
	_ "github.com/egret-stream/egret/uploaders/http"
)

// TestClusterDefaults loads the embedded kubernetes cluster with an
// operator file that sets a pod template patch as a YAML block scalar, and
// renders the manifests from the loaded config.
func TestClusterDefaults(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "kubernetes"), 0o755); err != nil {
		t.Fatal(err)
	}
	override := `egret.kubernetes.image.pull.policy: Always
egret.kubernetes.pod.template.patch: |
  spec:
    nodeSelector:
      egret.io/pool: streaming
`
	if err := os.WriteFile(filepath.Join(dir, "kubernetes", "scheduler.yaml"), []byte(override), 0o644); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"HOME": t.TempDir(), "USER": "alice"}
	c, err := conf.Load(conf.LoadOptions{Cluster: "kubernetes", ConfigPath: dir, Topology: "wordcount",
		LookupEnv: func(k string) (string, bool) { v, ok := env[k]; return v, ok }})
	if err != nil {
		t.Fatal(err)
	}
	cfg := c.Config()
	if cfg.String("egret.scheduler", "") != "kubernetes" {
		t.Fatalf("the embedded cluster selects %q", cfg.String("egret.scheduler", ""))
	}
	s, err := parseSettings(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !s.coreBundled || s.scheduleTimeout.String() != "2m0s" || s.pullPolicy != "Always" {
		t.Errorf("settings from the cluster config: %+v", s)
	}
	sc := newScheduler(s, nil, "default", nil)
	out, err := sc.RenderJob(testJob())
	if err != nil {
		t.Fatal(err)
	}
	decodeManifests(t, out)
	if !strings.Contains(string(out), "egret.io/pool: streaming") || !strings.Contains(string(out), "imagePullPolicy: Always") {
		t.Errorf("the operator's settings are not in the manifests:\n%s", out)
	}
}
