package yarn

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/egret-stream/egret/core/plan"
	"github.com/egret-stream/egret/core/spi"
	"github.com/egret-stream/egret/schedulers/schedulertest"
)

var serviceNameRule = regexp.MustCompile(`^[a-z][a-z0-9-]*$`)

func TestServiceName(t *testing.T) {
	seen := map[string]string{}
	for _, topo := range []string{"wordcount", "WordCount", "word_count", "word.count", "word-count", strings.Repeat("x", 200), "a"} {
		n := ServiceName(topo)
		if !serviceNameRule.MatchString(n) || len(n) > 63 {
			t.Errorf("ServiceName(%q) = %q: not a YARN service name ([a-z][a-z0-9-]*, at most 63)", topo, n)
		}
		if other, dup := seen[n]; dup {
			t.Errorf("topologies %q and %q share service name %q", other, topo, n)
		}
		seen[n] = topo
		if ServiceName(topo) != n {
			t.Errorf("ServiceName(%q) is not stable", topo)
		}
	}
	if n := ServiceName("wordcount"); !strings.HasPrefix(n, "egret-wordcount-") {
		t.Errorf("ServiceName(wordcount) = %q, want it to read egret-wordcount-<hash>", n)
	}
}

func TestInstanceNames(t *testing.T) {
	for c := 0; c < 5; c++ {
		got, ok := ContainerOf(InstanceName(c))
		if !ok || got != c {
			t.Errorf("ContainerOf(InstanceName(%d) = %q) = %d, %v", c, InstanceName(c), got, ok)
		}
	}
	if InstanceName(0) != "tmanager-0" || InstanceName(1) != "worker-0" || InstanceName(3) != "worker-2" {
		t.Errorf("instance names %s %s %s", InstanceName(0), InstanceName(1), InstanceName(3))
	}
	for _, bad := range []string{"worker-x", "tmanager-1", "other-0", "worker--1"} {
		if c, ok := ContainerOf(bad); ok {
			t.Errorf("ContainerOf(%q) = %d, want no container", bad, c)
		}
	}
}

func settingsFor(t *testing.T, kv ...string) *settings {
	t.Helper()
	cfg := spi.Config{KeyResourceManager: "http://rm:8088", KeyUser: "alice"}
	for i := 0; i+1 < len(kv); i += 2 {
		cfg[kv[i]] = kv[i+1]
	}
	s, err := parseSettings(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestBuildService(t *testing.T) {
	job := schedulertest.NewJob("Word_Count", 3)
	job.PackageURI = "hdfs://nn:8020/egret/topologies/c/r/Word_Count/p.tar.gz"
	job.Plan.Containers[2].Required = plan.Resources{CPU: 2.5, RAM: 3<<30 + 1}
	s := settingsFor(t, KeyQueue, "streaming", keyCoreURI, "hdfs://nn:8020/egret/egret", KeyNodeLabel, "gpu", KeyTManagerMemory, "256MiB")
	svc, err := s.buildService(job)
	if err != nil {
		t.Fatal(err)
	}
	if svc.Name != ServiceName("Word_Count") || svc.Queue != "streaming" || svc.Version != job.TopologyID {
		t.Errorf("service %s queue %s version %s", svc.Name, svc.Queue, svc.Version)
	}
	props := svc.Configuration.Properties
	if props[PropTopology] != "Word_Count" || props[PropPackageURI] != job.PackageURI || props["yarn.service.default-readiness-check.enabled"] != "false" {
		t.Errorf("service properties %v", props)
	}
	tm, w := svc.component(ComponentTManager), svc.component(ComponentWorker)
	if tm == nil || w == nil {
		t.Fatalf("components %+v", svc.Components)
	}
	if tm.NumberOfContainers != 1 || *tm.Resource != (Resource{CPUs: 1, Memory: "256"}) {
		t.Errorf("tmanager: %d containers of %+v", tm.NumberOfContainers, *tm.Resource)
	}
	// The largest container: 2.5 cores → 3 vcores, 3 GiB + 1 byte → 3073 MiB.
	if w.NumberOfContainers != 3 || *w.Resource != (Resource{CPUs: 3, Memory: "3073"}) {
		t.Errorf("worker: %d containers of %+v", w.NumberOfContainers, *w.Resource)
	}
	for _, c := range []*Component{tm, w} {
		if c.RestartPolicy != "ALWAYS" {
			t.Errorf("%s restart policy %q", c.Name, c.RestartPolicy)
		}
		files := c.Configuration.Files
		if len(files) != 2 || files[0] != (ConfigFile{Type: "ARCHIVE", SrcFile: job.PackageURI, DestFile: "package"}) ||
			files[1] != (ConfigFile{Type: "STATIC", SrcFile: "hdfs://nn:8020/egret/egret", DestFile: "egret"}) {
			t.Errorf("%s files %+v", c.Name, files)
		}
		if c.PlacementPolicy == nil || c.PlacementPolicy.Constraints[0].NodePartitions[0] != "gpu" {
			t.Errorf("%s placement %+v", c.Name, c.PlacementPolicy)
		}
		if !strings.HasPrefix(c.LaunchCommand, "EGRET_HOST=$NM_HOST exec ./egret executor --topology Word_Count --topology-id "+job.TopologyID+" --container ") ||
			!strings.HasSuffix(c.LaunchCommand, " --work-dir $PWD --config-file package/cluster.json") ||
			strings.Contains(c.LaunchCommand, "--package-uri") || strings.Contains(c.LaunchCommand, `"`) {
			t.Errorf("%s launch command %q", c.Name, c.LaunchCommand)
		}
	}
	if !strings.Contains(tm.LaunchCommand, "--container 0 ") || !strings.Contains(w.LaunchCommand, "--container $((${COMPONENT_ID}+1)) ") {
		t.Errorf("container indexes: %q / %q", tm.LaunchCommand, w.LaunchCommand)
	}
	if _, err := json.Marshal(svc); err != nil {
		t.Fatal(err)
	}
}

func TestBuildServiceBundledEgret(t *testing.T) {
	job := schedulertest.NewJob("wc", 1)
	job.PackageURI = "hdfs://nn:8020/p.tar.gz"
	if _, err := settingsFor(t).buildService(job); err == nil || !strings.Contains(err.Error(), keyCoreURI) {
		t.Errorf("without %s nor a bundled egret: %v; want an error naming %s", keyCoreURI, err, keyCoreURI)
	}
	job.Config = spi.Config{keyCoreBundle: "true"}
	svc, err := settingsFor(t).buildService(job)
	if err != nil {
		t.Fatal(err)
	}
	w := svc.component(ComponentWorker)
	if len(w.Configuration.Files) != 1 || !strings.Contains(w.LaunchCommand, " exec ./package/egret executor ") {
		t.Errorf("without egret.package.core.uri: files %+v, command %q", w.Configuration.Files, w.LaunchCommand)
	}
	if w.PlacementPolicy != nil {
		t.Errorf("placement without a node label: %+v", w.PlacementPolicy)
	}
}

func TestBuildServiceRejects(t *testing.T) {
	s := settingsFor(t, keyCoreURI, "hdfs://nn/egret")
	noURI := schedulertest.NewJob("wc", 2)
	noURI.PackageURI = ""
	gap := schedulertest.NewJob("wc", 3)
	gap.PackageURI = "hdfs://nn/p.tar.gz"
	gap.Plan.Containers = append(gap.Plan.Containers[:1], gap.Plan.Containers[2:]...) // 1, 3
	for name, job := range map[string]spi.Job{"no package": noURI, "gap in container ids": gap} {
		if _, err := s.buildService(job); err == nil {
			t.Errorf("%s: buildService succeeded", name)
		}
	}
}

func TestParseSettings(t *testing.T) {
	for name, tc := range map[string]struct {
		cfg  spi.Config
		want string
	}{
		"no rm":          {spi.Config{}, KeyResourceManager + " is required"},
		"rm not http":    {spi.Config{KeyResourceManager: "rm:8088"}, "is not the http(s)://host:port"},
		"rm with a path": {spi.Config{KeyResourceManager: "http://rm:8088/ws/v1"}, "is not the http(s)://host:port"},
		"bad queue":      {spi.Config{KeyResourceManager: "http://rm:8088", KeyQueue: "a b"}, "is not a queue name"},
		"bad label":      {spi.Config{KeyResourceManager: "http://rm:8088", KeyNodeLabel: "a||b"}, "is not a node label"},
		"negative prio":  {spi.Config{KeyResourceManager: "http://rm:8088", KeyPriority: "-1"}, KeyPriority},
		"zero vcores":    {spi.Config{KeyResourceManager: "http://rm:8088", KeyTManagerVcores: "0"}, "must be positive"},
		"bad timeout":    {spi.Config{KeyResourceManager: "http://rm:8088", KeyLaunchTimeout: "soon"}, KeyLaunchTimeout},
		"bad core uri":   {spi.Config{KeyResourceManager: "http://rm:8088", keyCoreURI: "egret"}, keyCoreURI},
	} {
		_, err := parseSettings(tc.cfg)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v; want an error containing %q", name, err, tc.want)
		}
	}
}

func TestDiagnostics(t *testing.T) {
	for _, tc := range []struct{ body, want string }{
		{`{"diagnostics":"Failed to submit application_1 to YARN : unknown queue: x\n\tat org.apache.Foo"}`, "Failed to submit application_1 to YARN : unknown queue: x"},
		{`{"RemoteException":{"exception":"NotFoundException","message":"app not found"}}`, "app not found"},
		{"<html><body>404</body></html>", "404 Not Found (an HTML page: is the address a ResourceManager with yarn.webapp.api-service.enable=true?)"},
		{"plain text\nmore", "plain text"},
	} {
		if got := diagnostics([]byte(tc.body), "404 Not Found"); got != tc.want {
			t.Errorf("diagnostics(%q) = %q, want %q", tc.body, got, tc.want)
		}
	}
}
