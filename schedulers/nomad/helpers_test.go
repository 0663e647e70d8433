package nomad

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/nomad/api"
	"go.uber.org/zap/zaptest"

	"github.com/egret-stream/egret/core/plan"
	"github.com/egret-stream/egret/core/spi"
	"github.com/egret-stream/egret/schedulers/nomad/nomadtest"
)

// goldenSHA stands in for the package digest in the golden files, which
// must not depend on how compress/gzip encodes the test package.
const goldenSHA = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"

// testPackageURI is where the fake's client downloads testPackage from.
const testPackageURI = "http://packages.example.com:7780/packages/wordcount-alice-9f86d081884c.tar.gz"

// testPackage is a topology package as egret submit builds it for the
// nomad cluster (egret.package.core.bundle: true): the egret binary, the
// topology binary, its definition and the cluster config.
var testPackage = sync.OnceValue(func() []byte { return tarGz("egret", "topology", "topology.defn", "cluster.json") })

// tarGz builds a tar.gz holding one small file per name.
func tarGz(names ...string) []byte {
	files := map[string]string{}
	for _, n := range names {
		files[n] = "content of " + n
	}
	return tarGzFiles(files)
}

// tarGzFiles builds a tar.gz of executable files, name → content.
func tarGzFiles(files map[string]string) []byte {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for _, n := range slices.Sorted(maps.Keys(files)) {
		body := []byte(files[n])
		if err := tw.WriteHeader(&tar.Header{Name: n, Mode: 0o755, Size: int64(len(body)), Typeflag: tar.TypeReg}); err != nil {
			panic(err)
		}
		if _, err := tw.Write(body); err != nil {
			panic(err)
		}
	}
	if err := tw.Close(); err != nil {
		panic(err)
	}
	if err := zw.Close(); err != nil {
		panic(err)
	}
	return buf.Bytes()
}

func sha256Hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// newFake starts a fake Nomad whose clients download testPackage from
// testPackageURI (and nothing else).
func newFake(t *testing.T, opts ...nomadtest.Option) *nomadtest.Server {
	return nomadtest.New(t, append([]nomadtest.Option{nomadtest.WithArtifacts(map[string][]byte{testPackageURI: testPackage()})}, opts...)...)
}

// schedConfig is the scheduler config of the tests, against addr.
func schedConfig(addr string, extra ...string) spi.Config {
	c := spi.Config{
		KeyAddress:            addr,
		KeyNamespace:          "default",
		KeyDatacenters:        "dc1",
		KeyDriver:             "raw_exec",
		KeyMHzPerCore:         "2000",
		KeyPlacementTimeout:   "10s",
		keyCoreBundle:         "true",
		"egret.metrics.sinks": "file,tmanager,prometheus",
	}
	for i := 0; i+1 < len(extra); i += 2 {
		c[extra[i]] = extra[i+1]
	}
	return c
}

// newSched builds a scheduler from cfg, closed when t ends.
func newSched(t *testing.T, cfg spi.Config) *Scheduler {
	t.Helper()
	s, err := New(cfg, zaptest.NewLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	sc := s.(*Scheduler)
	sc.evalPoll = time.Millisecond
	return sc
}

// wordcount is a fixed job with n containers of distinct sizes.
func wordcount(n int) spi.Job {
	p := &plan.PackingPlan{TopologyID: "wordcount-7f3a9c"}
	for i := 1; i <= n; i++ {
		r := plan.Resources{CPU: 0.5 + float64(i), RAM: int64(512*(i+1)) << 20, Disk: int64(i) << 30}
		p.Containers = append(p.Containers, plan.Container{
			ID: i,
			Instances: []plan.Instance{
				{Component: "sentence", TaskID: 2*i - 1, Index: i - 1, Resources: plan.Resources{CPU: 0.5, RAM: 256 << 20, Disk: 128 << 20}},
				{Component: "count", TaskID: 2 * i, Index: i - 1, Resources: plan.Resources{CPU: 1, RAM: 512 << 20, Disk: 128 << 20}},
			},
			Required: r,
		})
	}
	return spi.Job{
		Topology: "wordcount", TopologyID: "wordcount-7f3a9c", Cluster: "nomad", Role: "alice", Environ: "prod",
		PackageURI:    testPackageURI,
		PackageSHA256: sha256Hex(testPackage()),
		Plan:          p,
		Config: spi.Config{
			"egret.statemgr":                   "zookeeper",
			"egret.statemgr.connection.string": "zk-1:2181,zk-2:2181",
			"egret.package.goos":               "linux",
			"egret.package.goarch":             "amd64",
			"egret.metrics.sinks":              "file,tmanager,prometheus",
			KeyToken:                           "s3cret-token",
		},
	}
}

// observe returns the running containers of topology as the fake sees
// them: container id → allocation id / restart count.
func observe(f *nomadtest.Server, topology string) map[int]string {
	jobs := map[string]bool{}
	for _, j := range f.Jobs() {
		if deref(j.Name) == topology && !deref(j.Stop) {
			jobs[deref(j.Namespace)+"/"+deref(j.ID)] = true
		}
	}
	out := map[int]string{}
	for _, a := range f.Allocations() {
		if !jobs[a.Namespace+"/"+a.JobID] || a.DesiredStatus != api.AllocDesiredStatusRun || a.ClientStatus != api.AllocClientStatusRunning {
			continue
		}
		c, ok := containerOf(a.TaskGroup)
		if !ok {
			continue
		}
		var restarts uint64
		if st := a.TaskStates[TaskName]; st != nil {
			restarts = st.Restarts
		}
		out[c] = fmt.Sprintf("%s/%d", a.ID, restarts)
	}
	return out
}

func observer(f *nomadtest.Server) func(context.Context, string) (map[int]string, error) {
	return func(_ context.Context, topology string) (map[int]string, error) { return observe(f, topology), nil }
}

// onlyJob returns the one job the fake holds.
func onlyJob(t *testing.T, f *nomadtest.Server) *api.Job {
	t.Helper()
	jobs := f.Jobs()
	if len(jobs) != 1 {
		t.Fatalf("the fake holds %d jobs, want 1", len(jobs))
	}
	return jobs[0]
}

func group(t *testing.T, j *api.Job, name string) *api.TaskGroup {
	t.Helper()
	for _, tg := range j.TaskGroups {
		if deref(tg.Name) == name {
			return tg
		}
	}
	t.Fatalf("job %s has no group %s", deref(j.ID), name)
	return nil
}

func requests(f *nomadtest.Server, method, pathPrefix string) []nomadtest.Request {
	var out []nomadtest.Request
	for _, r := range f.Requests() {
		if r.Method == method && strings.HasPrefix(r.Path, pathPrefix) {
			out = append(out, r)
		}
	}
	return out
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
