package nomad

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/hashicorp/nomad/api"

	"github.com/egret-stream/egret/core/plan"
	"github.com/egret-stream/egret/core/spi"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// TestGoldenJobs registers a 1- and a 3-container topology with the fake
// and compares the Job the fake received with testdata/*.golden.json; the
// dry-run rendering (JobJSON) must be that same job.
func TestGoldenJobs(t *testing.T) {
	for _, tc := range []struct {
		containers int
		golden     string
	}{
		{1, "job-1-container.golden.json"},
		{3, "job-3-containers.golden.json"},
	} {
		t.Run(tc.golden, func(t *testing.T) {
			f := newFake(t)
			cfg := schedConfig(f.URL)
			job := wordcount(tc.containers)
			if err := newSched(t, cfg).Schedule(context.Background(), job); err != nil {
				t.Fatal(err)
			}
			reg := f.Registered()
			if len(reg) != 1 {
				t.Fatalf("%d register requests, want 1", len(reg))
			}
			got, err := PruneNulls(reg[0])
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, '\n')
			// The package digest depends on compress/gzip's encoding.
			got = bytes.ReplaceAll(got, []byte(job.PackageSHA256), []byte(goldenSHA))
			path := filepath.Join("testdata", tc.golden)
			if *update {
				if err := os.WriteFile(path, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test -update to create it)", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("registered job differs from %s (go test -update rewrites it):\n%s", path, got)
			}

			dry, err := JobJSON(job, cfg)
			if err != nil {
				t.Fatal(err)
			}
			var wrapped struct{ Job json.RawMessage }
			if err := json.Unmarshal(dry, &wrapped); err != nil || len(wrapped.Job) == 0 {
				t.Fatalf("JobJSON is not {\"Job\": {...}}: %v\n%s", err, dry)
			}
			if dj, _ := PruneNulls(wrapped.Job); !bytes.Equal(bytes.ReplaceAll(append(dj, '\n'), []byte(job.PackageSHA256), []byte(goldenSHA)), want) {
				t.Errorf("JobJSON's job differs from the registered one:\n%s", dry)
			}
			// What `nomad job plan -json` reads must decode into the API
			// type without unknown fields.
			var req struct{ Job *api.Job }
			dec := json.NewDecoder(bytes.NewReader(dry))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&req); err != nil {
				t.Errorf("JobJSON does not decode as a Nomad job: %v", err)
			}
		})
	}
}

// TestJobShape checks the parts of the job that the goldens only show.
func TestJobShape(t *testing.T) {
	s, err := parseSettings(schedConfig("http://nomad:4646"))
	if err != nil {
		t.Fatal(err)
	}
	job := wordcount(2)
	j, err := s.buildJob(job)
	if err != nil {
		t.Fatal(err)
	}
	if deref(j.ID) != "wordcount-7f3a9c" || deref(j.Name) != "wordcount" || deref(j.Type) != "service" {
		t.Errorf("job id/name/type = %s/%s/%s", deref(j.ID), deref(j.Name), deref(j.Type))
	}
	for k, v := range map[string]string{MetaTopology: "wordcount", MetaTopologyID: "wordcount-7f3a9c", MetaCluster: "nomad", MetaRole: "alice", MetaEnviron: "prod"} {
		if j.Meta[k] != v {
			t.Errorf("meta %s = %q, want %q", k, j.Meta[k], v)
		}
	}
	if got := containersOf(j); !slices.Equal(got, []int{0, 1, 2}) {
		t.Fatalf("groups %v, want containers 0, 1, 2", got)
	}
	for _, tg := range j.TaskGroups {
		c, _ := containerOf(deref(tg.Name))
		task := tg.Tasks[0]
		labels := map[string]bool{}
		for _, p := range tg.Networks[0].DynamicPorts {
			labels[p.Label] = true
		}
		wantPorts := []string{PortStmgr, PortMetrics}
		if c == 0 {
			wantPorts = []string{PortTManager, PortTManagerHTTP, PortMetrics}
		}
		for _, l := range wantPorts {
			if !labels[l] {
				t.Errorf("%s: no dynamic port %s", deref(tg.Name), l)
			}
			if task.Env[EnvPortPrefix+strings.ToUpper(l)] != "${NOMAD_PORT_"+l+"}" {
				t.Errorf("%s: env %s%s = %q", deref(tg.Name), EnvPortPrefix, strings.ToUpper(l), task.Env[EnvPortPrefix+strings.ToUpper(l)])
			}
		}
		if task.Env[EnvContainerIndex] != tg.Meta[MetaContainer] || tg.Meta[MetaContainer] == "" {
			t.Errorf("%s: container index env %q, meta %q", deref(tg.Name), task.Env[EnvContainerIndex], tg.Meta[MetaContainer])
		}
		args := task.Config["args"].([]string)
		joined := strings.Join(args, " ")
		for _, want := range []string{"executor ", "--container " + tg.Meta[MetaContainer], "--work-dir ${NOMAD_TASK_DIR}/egret", "--config-file ${NOMAD_TASK_DIR}/cluster.json", "--topology-id wordcount-7f3a9c"} {
			if !strings.Contains(joined, want) {
				t.Errorf("%s: args %q lack %q", deref(tg.Name), args, want)
			}
		}
		if got := strings.Contains(joined, "--stmgr-port ${NOMAD_PORT_stmgr}"); got != (c > 0) {
			t.Errorf("%s: args %q: passes the stmgr port %v, want %v", deref(tg.Name), args, got, c > 0)
		}
		if strings.Contains(joined, "--package-uri") {
			t.Errorf("%s: args %q pass the package URI; Nomad fetches the package", deref(tg.Name), args)
		}
		pkg := task.Artifacts[0]
		if deref(pkg.GetterSource) != job.PackageURI || deref(pkg.RelativeDest) != "local/egret/package" ||
			pkg.GetterOptions["checksum"] != "sha256:"+job.PackageSHA256 || pkg.GetterOptions["archive"] != "tar.gz" {
			t.Errorf("%s: package artifact %s", deref(tg.Name), mustJSON(t, pkg))
		}
		tmpl := task.Templates[0]
		if deref(tmpl.DestPath) != "local/cluster.json" {
			t.Errorf("template destination %q", deref(tmpl.DestPath))
		}
		if strings.Contains(deref(tmpl.EmbeddedTmpl), "s3cret-token") {
			t.Errorf("%s: the embedded config holds the Nomad token", deref(tg.Name))
		}
	}
	if got := mustJSON(t, j.Constraints); !strings.Contains(got, `"${attr.kernel.name}"`) || !strings.Contains(got, `"${attr.cpu.arch}"`) {
		t.Errorf("constraints %s lack the package's OS and architecture", got)
	}
	g1 := j.TaskGroups[1].Tasks[0].Resources
	if deref(g1.CPU) != 3000 || deref(g1.MemoryMB) != 1024 || deref(j.TaskGroups[1].EphemeralDisk.SizeMB) != 1024 {
		t.Errorf("container 1 resources cpu %d MHz, memory %d MiB, disk %d MiB; want 3000, 1024, 1024",
			deref(g1.CPU), deref(g1.MemoryMB), deref(j.TaskGroups[1].EphemeralDisk.SizeMB))
	}
}

func TestDriversAndCore(t *testing.T) {
	for _, tc := range []struct {
		name, driver, core string
		command            string
		coreArtifact       string // RelativeDest, "" for none
		coreMode           string
	}{
		{"raw_exec from package", "raw_exec", "", "${NOMAD_TASK_DIR}/egret/package/egret", "", ""},
		{"exec with core archive", "exec", "https://dl.example.com/egret-1.0-linux-amd64.tar.gz", "${NOMAD_TASK_DIR}/egret-core/egret", "local/egret-core", ""},
		{"raw_exec with core binary", "raw_exec", "https://dl.example.com/egret", "${NOMAD_TASK_DIR}/egret-core/egret", "local/egret-core/egret", "file"},
		{"docker from image", "docker", "", "egret", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := parseSettings(schedConfig("http://nomad:4646", KeyDriver, tc.driver, keyCoreURI, tc.core, KeyDockerImage, "registry.example.com/egret:1.0"))
			if err != nil {
				t.Fatal(err)
			}
			j, err := s.buildJob(wordcount(1))
			if err != nil {
				t.Fatal(err)
			}
			task := j.TaskGroups[1].Tasks[0]
			if task.Driver != tc.driver || task.Config["command"] != tc.command {
				t.Errorf("driver %s command %v, want %s %s", task.Driver, task.Config["command"], tc.driver, tc.command)
			}
			if tc.driver == "docker" {
				if task.Config["image"] != "registry.example.com/egret:1.0" || !slices.Equal(task.Config["ports"].([]string), []string{PortStmgr, PortMetrics, PortShell}) {
					t.Errorf("docker config %s", mustJSON(t, task.Config))
				}
			} else if _, ok := task.Config["image"]; ok {
				t.Errorf("%s config has an image", tc.driver)
			}
			if tc.coreArtifact == "" {
				if len(task.Artifacts) != 1 {
					t.Errorf("artifacts %s, want only the package", mustJSON(t, task.Artifacts))
				}
				return
			}
			if len(task.Artifacts) != 2 {
				t.Fatalf("artifacts %s, want the package and the core", mustJSON(t, task.Artifacts))
			}
			core := task.Artifacts[1]
			if deref(core.GetterSource) != tc.core || deref(core.RelativeDest) != tc.coreArtifact || deref(core.GetterMode) != tc.coreMode {
				t.Errorf("core artifact %s", mustJSON(t, core))
			}
		})
	}
}

// TestEmbeddedConfig: whatever the config holds, the template renders it
// verbatim (no template action can appear) and it reads back equal.
func TestEmbeddedConfig(t *testing.T) {
	cfg := spi.Config{
		"a": `{{ env "HOME" }}`, "b": "<<x>> and >> <<", "c": "${NOMAD_TASK_DIR}", "d": "line\nbreak & \"quote\"",
		KeyToken: "secret",
	}
	s, err := parseSettings(schedConfig("http://nomad:4646"))
	if err != nil {
		t.Fatal(err)
	}
	job := wordcount(1)
	job.Config = cfg
	j, err := s.buildJob(job)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := j.TaskGroups[0].Tasks[0].Templates[0]
	body := deref(tmpl.EmbeddedTmpl)
	if strings.Contains(body, deref(tmpl.LeftDelim)) || strings.Contains(body, deref(tmpl.RightDelim)) {
		t.Fatalf("the template holds its delimiters %s %s:\n%s", deref(tmpl.LeftDelim), deref(tmpl.RightDelim), body)
	}
	back, err := configFromJob(j)
	if err != nil {
		t.Fatal(err)
	}
	want := cfg.Clone()
	delete(want, KeyToken)
	if mustJSON(t, back) != mustJSON(t, want) {
		t.Errorf("config read back %v, want %v", back, want)
	}
}

func TestJobID(t *testing.T) {
	for _, tc := range []struct{ name, id, want string }{
		{"wc", "wc-1a2b", "wc-1a2b"},
		{"wc", "", "wc"},
		{"wc", "1a2b", "wc-1a2b"},
		{"wc", "wcx-1", "wc-wcx-1"},
	} {
		if got := JobID(spi.Job{Topology: tc.name, TopologyID: tc.id}); got != tc.want {
			t.Errorf("JobID(%s, %s) = %s, want %s", tc.name, tc.id, got, tc.want)
		}
	}
}

func TestBadJobsAndConfig(t *testing.T) {
	_, err := parseSettings(spi.Config{KeyDriver: "podman", KeyNetworkMode: "overlay", KeyMHzPerCore: "-5", KeyAddress: "nomad:4646", KeyRestartMode: "sometimes"})
	if err == nil {
		t.Fatal("bad config accepted")
	}
	for _, want := range []string{KeyDriver, KeyNetworkMode, KeyMHzPerCore, KeyAddress, KeyRestartMode} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %s", err, want)
		}
	}
	s, _ := parseSettings(schedConfig("http://nomad:4646"))
	for name, edit := range map[string]func(*spi.Job){
		"no package": func(j *spi.Job) { j.PackageURI = "" },
		"no plan":    func(j *spi.Job) { j.Plan = nil },
		"space":      func(j *spi.Job) { j.Topology, j.TopologyID = "word count", "word count-1" },
		"container 0 in plan": func(j *spi.Job) {
			j.Plan.Containers[0].ID = 0
		},
	} {
		job := wordcount(1)
		edit(&job)
		if _, err := s.buildJob(job); err == nil {
			t.Errorf("%s: job accepted", name)
		}
		if _, err := JobJSON(job, schedConfig("http://nomad:4646")); err == nil {
			t.Errorf("%s: JobJSON accepted the job", name)
		}
	}
}

// TestDryRunRegisters sends JobJSON's output, byte for byte, as the body
// of PUT /v1/jobs: Nomad accepts it as a job (what `nomad job validate
// -json` and `plan -json` check), and the scheduler finds the topology as
// its own. The docs do not suggest running it by hand: a dry run writes no
// topology state.
func TestDryRunRegisters(t *testing.T) {
	f := newFake(t)
	cfg := schedConfig(f.URL)
	for _, driver := range []string{"raw_exec", "exec", "docker"} {
		dry, err := JobJSON(wordcount(3), schedConfig(f.URL, KeyDriver, driver))
		if err != nil {
			t.Fatal(err)
		}
		req, _ := http.NewRequest(http.MethodPut, f.URL+"/v1/jobs", bytes.NewReader(dry))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: register of the dry-run job: %s: %s", driver, resp.Status, body)
		}
		if got := observe(f, "wordcount"); len(got) != 4 {
			t.Errorf("%s: containers %v after registering the dry-run job", driver, got)
		}
		links, err := newSched(t, cfg).JobLinks(context.Background(), "wordcount")
		if err != nil || len(links) != 1 {
			t.Errorf("%s: the scheduler does not find the dry-run job: %v %v", driver, links, err)
		}
		if err := newSched(t, cfg).Kill(context.Background(), "wordcount"); err != nil {
			t.Fatal(err)
		}
	}
}

// TestReplacedBy: the containers of both plans whose resources differ are
// the ones Update gives new task groups (Nomad replaces their
// allocations); added, removed and unchanged containers are not.
func TestReplacedBy(t *testing.T) {
	res := func(cpu float64) plan.Resources { return plan.Resources{CPU: cpu, RAM: 1 << 30, Disk: 1 << 30} }
	cur := &plan.PackingPlan{Containers: []plan.Container{{ID: 1, Required: res(1)}, {ID: 2, Required: res(1)}, {ID: 3, Required: res(1)}}}
	next := &plan.PackingPlan{Containers: []plan.Container{{ID: 1, Required: res(1)}, {ID: 2, Required: res(2)}, {ID: 4, Required: res(2)}}}
	var s Scheduler
	if got := s.ReplacedBy(cur, next); !slices.Equal(got, []int{2}) {
		t.Errorf("ReplacedBy = %v, want [2]", got)
	}
	if got := s.ReplacedBy(cur, cur); len(got) != 0 {
		t.Errorf("ReplacedBy of an unchanged plan = %v, want none", got)
	}
}
