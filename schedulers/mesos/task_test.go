package mesos

import (
	"strings"
	"testing"
	"time"

	mesoslib "github.com/mesos/mesos-go/api/v1/lib"
	"github.com/mesos/mesos-go/api/v1/lib/resources"

	"github.com/egret-stream/egret/core/spi"
	"github.com/egret-stream/egret/schedulers/schedulertest"
)

func testSettings(t *testing.T, extra spi.Config) *settings {
	t.Helper()
	cfg := spi.Config{keyWorkDir: t.TempDir()}
	for k, v := range extra {
		cfg[k] = v
	}
	s, err := parseSettings(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestFrameworkInfo(t *testing.T) {
	s := testSettings(t, spi.Config{KeyRole: "streams", KeyPrincipal: "egret", KeyUser: "svc", KeyCheckpoint: "false", KeyFailoverTimeout: "1h"})
	f := newFramework(s, schedulertest.NewJob("wc", 1), "", nil)
	f.id = "fw-1"
	fi := f.frameworkInfo()
	if fi.Name != "egret-wc" || fi.User != "svc" || fi.GetRole() != "streams" || fi.GetPrincipal() != "egret" ||
		fi.GetCheckpoint() || fi.GetFailoverTimeout() != 3600 || fi.GetID().GetValue() != "fw-1" {
		t.Errorf("FrameworkInfo %+v", fi)
	}
}

func TestBuildTask(t *testing.T) {
	s := testSettings(t, spi.Config{keyCoreURI: "http://pkgs/egret", keyMetricsSinks: "file,prometheus", KeyTManagerCPU: "0.25", KeyTManagerRAM: "300MiB", keyStopGrace: "7s"})
	job := schedulertest.NewJob("wc", 1)
	job.PackageURI = "http://pkgs/wc.tar.gz"
	n := s.need(0, s.wanted(job)[0])
	if n.cpus != 0.25 || n.mem != 300 || n.ports != 4 {
		t.Fatalf("container 0 needs %v", n)
	}
	offer := mesoslib.Resources{
		resources.NewCPUs(4).Role("*").Resource,
		resources.NewMemory(4096).Role("*").Resource,
		resources.NewDisk(4096).Role("*").Resource,
		resources.Build().Name(resources.NamePorts).Ranges(resources.BuildRanges().Span(31000, 31001).Span(31005, 31010).Ranges).Role("*").Resource,
	}
	res, ports, short := take(offer, "*", n)
	if short != nil || len(ports) != 4 || ports[2] != 31005 || ports[3] != 31006 {
		t.Fatalf("take: ports %v short %v", ports, short)
	}
	ti := s.buildTask(taskSpec{job: job, container: 0, taskID: TaskID(job.TopologyID, 0, 7), agentID: "a1", hostname: "h1", resources: res, ports: ports})
	cmd := ti.GetCommand().GetValue()
	for _, want := range []string{
		`exec ./egret executor --topology wc --topology-id wc-id --container 0 --work-dir "$MESOS_SANDBOX/work" --package-uri "$MESOS_SANDBOX/topology.tar.gz" --package-sha256 `,
	} {
		if !strings.HasPrefix(cmd, want) {
			t.Errorf("command\n%s\ndoes not start with\n%s", cmd, want)
		}
	}
	env := map[string]string{}
	for _, v := range ti.GetCommand().GetEnvironment().GetVariables() {
		env[v.Name] = v.GetValue()
	}
	if env["EGRET_PORT_TMANAGER"] != "31000" || env["EGRET_PORT_TMANAGER_HTTP"] != "31001" || env["EGRET_PORT_METRICS"] != "31005" || env["EGRET_PORT_SHELL"] != "31006" || env["EGRET_HOST"] != "h1" || env["EGRET_CONTAINER_INDEX"] != "0" {
		t.Errorf("environment %v", env)
	}
	uris := ti.GetCommand().URIs
	if len(uris) != 2 || uris[0].GetOutputFile() != "topology.tar.gz" || uris[0].GetExtract() || uris[1].GetOutputFile() != "egret" || !uris[1].GetExecutable() {
		t.Errorf("URIs %+v", uris)
	}
	if got := time.Duration(ti.GetKillPolicy().GetGracePeriod().Nanoseconds); got != 12*time.Second {
		t.Errorf("kill grace %s, want the stop grace + 5s", got)
	}
	if c, ok := containerOfTask(ti.TaskID.Value); !ok || c != 0 {
		t.Errorf("containerOfTask(%q) = %d, %v", ti.TaskID.Value, c, ok)
	}
	if _, _, short := take(offer, "*", need{cpus: 8, mem: 1, disk: 1, ports: 20}); len(short) != 2 ||
		short[0] != "cpus: needs 8, the offer has 4 (short 4)" || short[1] != "ports: needs 20, the offer has 8 (short 12)" {
		t.Errorf("shortfall %q", short)
	}
	if _, _, short := take(offer, "other", n); len(short) != 0 {
		t.Error("resources reserved for no role and offered as * must be allocatable to any role")
	}
}

func TestShellLine(t *testing.T) {
	got := shellLine("./egret", []string{"executor", "--topology", "it's", "--work-dir", "$MESOS_SANDBOX/work", "--x", "$(rm -rf /)", "--port", "$EGRET_PORT_STMGR"})
	want := `./egret executor --topology 'it'\''s' --work-dir "$MESOS_SANDBOX/work" --x '$(rm -rf /)' --port "$EGRET_PORT_STMGR"`
	if got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

func TestBackoff(t *testing.T) {
	s := testSettings(t, spi.Config{KeyBackoffInitial: "1s", KeyBackoffMax: "5s"})
	for failures, want := range map[int]time.Duration{1: time.Second, 2: 2 * time.Second, 3: 4 * time.Second, 4: 5 * time.Second, 10: 5 * time.Second} {
		if got := s.backoff(failures); got != want {
			t.Errorf("backoff(%d) = %s, want %s", failures, got, want)
		}
	}
}
