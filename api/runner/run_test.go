package runner

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/egret-stream/egret/api"
	"github.com/egret-stream/egret/core/topobin"
	"github.com/egret-stream/egret/core/topology"
	"github.com/egret-stream/egret/examples/wordcount/wordcount"
)

func runArgs(b *api.TopologyBuilder, args ...string) (code int, stdout, stderr string) {
	var out, errOut bytes.Buffer
	code = MainArgs(b, args, &out, &errOut)
	return code, out.String(), errOut.String()
}

func TestDefineWritesTheDefinition(t *testing.T) {
	b := wordcount.Builder(wordcount.Options{CountParallelism: 3})
	b.SetContainers(2).SetConfig("user.setting", "42")
	path := filepath.Join(t.TempDir(), "wordcount.defn")
	code, stdout, stderr := runArgs(b, "--define", path)
	if code != ExitOK {
		t.Fatalf("exit %d, stderr:\n%s", code, stderr)
	}
	if stdout != "" || stderr != "" {
		t.Errorf("define mode printed stdout %q stderr %q", stdout, stderr)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	got, err := topology.Unmarshal(data)
	if err != nil {
		t.Fatal(err)
	}
	built, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(normalized(got), normalized(built.Logical)) {
		t.Errorf("definition read back differs:\n got %+v\nwant %+v", got, built.Logical)
	}
	if got.Containers() != 2 || got.Config["user.setting"] != "42" || got.Parallelism()["count"] != 3 {
		t.Errorf("definition lost settings: %+v", got)
	}
	if err := topology.Validate(got); err != nil {
		t.Errorf("definition does not validate: %v", err)
	}
	if entries, _ := os.ReadDir(filepath.Dir(path)); len(entries) != 1 {
		t.Errorf("define left %d files behind (temporary file?)", len(entries))
	}
}

// normalized returns a copy of t with empty maps and slices as nil:
// protobuf does not tell them apart.
func normalized(t *topology.Topology) *topology.Topology {
	n := t.Clone()
	if len(n.Config) == 0 {
		n.Config = nil
	}
	for i := range n.Components {
		c := &n.Components[i]
		if len(c.Config) == 0 {
			c.Config = nil
		}
		if len(c.Outputs) == 0 {
			c.Outputs = nil
		}
		if len(c.Inputs) == 0 {
			c.Inputs = nil
		}
		for j := range c.Outputs {
			if len(c.Outputs[j].Fields) == 0 {
				c.Outputs[j].Fields = nil
			}
		}
		for j := range c.Inputs {
			if len(c.Inputs[j].Fields) == 0 {
				c.Inputs[j].Fields = nil
			}
		}
	}
	return n
}

func TestDefineToUnwritablePath(t *testing.T) {
	path := filepath.Join(t.TempDir(), "missing", "dir", "x.defn")
	code, _, stderr := runArgs(wordcount.Builder(wordcount.Options{}), "--define", path)
	if code != ExitFailure || !strings.Contains(stderr, "write topology definition") {
		t.Errorf("exit %d, stderr %q", code, stderr)
	}
}

type idleSpout struct{ api.BaseSpout }

func (idleSpout) NextTuple()                               {}
func (idleSpout) DeclareOutputFields(d api.OutputDeclarer) { d.Declare("word") }

type idleBolt struct{ api.BaseBolt }

func (idleBolt) Execute(api.Tuple)                      {}
func (idleBolt) DeclareOutputFields(api.OutputDeclarer) {}

func TestInvalidTopologyExitsOneWithEveryProblem(t *testing.T) {
	b := api.NewTopologyBuilder("broken")
	b.SetContainers(0)
	b.SetSpout("words", func() api.Spout { return idleSpout{} }, 0)
	b.SetBolt("count", func() api.Bolt { return idleBolt{} }, 1).FieldsGrouping("words", "wrod")
	b.SetBolt("stmgr", func() api.Bolt { return idleBolt{} }, 1).ShuffleGrouping("ghost")
	const problems = 5 // containers, parallelism, field, reserved name, unknown component

	for _, args := range [][]string{{"--local"}, {"--define", filepath.Join(t.TempDir(), "d")}} {
		code, stdout, stderr := runArgs(b, args...)
		if code != ExitFailure {
			t.Errorf("%v: exit %d, want %d", args, code, ExitFailure)
		}
		if stdout != "" {
			t.Errorf("%v: stdout %q", args, stdout)
		}
		lines := strings.Split(strings.TrimRight(stderr, "\n"), "\n")
		if len(lines) != problems+1 {
			t.Fatalf("%v: stderr has %d lines, want a header and %d problems:\n%s", args, len(lines), problems, stderr)
		}
		if !strings.Contains(lines[0], `topology "broken" is invalid (5 problems)`) {
			t.Errorf("header %q", lines[0])
		}
		for _, want := range []string{"topology.containers", `component "words": parallelism 0`, `"wrod"`, `component "stmgr"`, `"ghost"`} {
			if !strings.Contains(stderr, want) {
				t.Errorf("%v: stderr does not mention %s:\n%s", args, want, stderr)
			}
		}
	}
}

func TestBadCommandLine(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"--nope"}, "flag provided but not defined"},
		{[]string{"--local", "--duration", "soon"}, "invalid value"},
		{[]string{"--local", "extra"}, `unexpected arguments ["extra"]`},
		{[]string{"--local", "--log-level", "loud"}, "--log-level"},
		{nil, "Usage:"},
	}
	for _, tc := range tests {
		code, stdout, stderr := runArgs(wordcount.Builder(wordcount.Options{}), tc.args...)
		if code != ExitUsage {
			t.Errorf("%q: exit %d, want %d", tc.args, code, ExitUsage)
		}
		if !strings.Contains(stderr, tc.want) {
			t.Errorf("%q: stderr does not contain %q:\n%s", tc.args, tc.want, stderr)
		}
		if stdout != "" {
			t.Errorf("%q: stdout %q", tc.args, stdout)
		}
	}
	if code, _, stderr := runArgs(wordcount.Builder(wordcount.Options{}), "--help"); code != ExitOK || !strings.Contains(stderr, "--local") {
		t.Errorf("--help: exit %d, stderr %q", code, stderr)
	}
}

// TestLocalRunPrintsSummary runs word count in this process until the
// count bolts have counted words, then stops it as Ctrl-C would (SIGTERM to
// this process): the summary table and counters are printed.
func TestLocalRunPrintsSummary(t *testing.T) {
	reports := t.TempDir()
	b := wordcount.Builder(wordcount.Options{ReportEvery: 50 * time.Millisecond, ReportDir: reports, Out: &bytes.Buffer{}})
	type result struct {
		code           int
		stdout, stderr string
	}
	done := make(chan result, 1)
	go func() {
		code, stdout, stderr := runArgs(b, "--local")
		done <- result{code, stdout, stderr}
	}()
	// The count bolts report only while the run is under way, after it
	// set up its signal handling: SIGTERM then stops the run, not the test.
	deadline := time.Now().Add(2 * time.Minute)
	for {
		counts, err := wordcount.ReadReports(reports, "count-")
		if err == nil && len(counts) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no word counted after %s (last error: %v)", 2*time.Minute, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := syscall.Kill(os.Getpid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	var res result
	select {
	case res = <-done:
	case <-time.After(2 * time.Minute):
		t.Fatal("the run did not stop after SIGTERM")
	}
	code, stdout, stderr := res.code, res.stdout, res.stderr
	if code != ExitOK {
		t.Fatalf("exit %d, stderr:\n%s", code, stderr)
	}
	for _, want := range []string{
		`running topology "wordcount" in this process (6 tasks); Ctrl-C stops it`,
		`topology "wordcount" ran`,
		"component", "emitted/s", "avg execute", "dropped",
		"user counters:",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("stdout does not contain %q:\n%s", want, stdout)
		}
	}
	// The summary's counters: every word the spout emitted was counted.
	words := counter(t, stdout, "sentence.words")
	counted := counter(t, stdout, "count.counted")
	if words == 0 || words != counted {
		t.Errorf("sentence.words = %d, count.counted = %d; want equal and non-zero:\n%s", words, counted, stdout)
	}
	for _, c := range []string{"sentence", "split", "count", "report"} {
		if !regexp.MustCompile(`(?m)^\s*` + c + `\s+(spout|bolt)\s+\d+`).MatchString(stdout) {
			t.Errorf("no table row for %s:\n%s", c, stdout)
		}
	}
}

func TestLocalDeactivatedEmitsNothing(t *testing.T) {
	b := wordcount.Builder(wordcount.Options{Out: &bytes.Buffer{}})
	code, stdout, stderr := runArgs(b, "--local", "--deactivated", "--duration", "50ms")
	if code != ExitOK {
		t.Fatalf("exit %d, stderr:\n%s", code, stderr)
	}
	if !strings.Contains(stdout, "(6 tasks) for 50ms; Ctrl-C stops it") {
		t.Errorf("the run does not announce its duration:\n%s", stdout)
	}
	if !regexp.MustCompile(`(?m)^\s*sentence\s+spout\s+1\s+0\s`).MatchString(stdout) {
		t.Errorf("a deactivated spout emitted tuples:\n%s", stdout)
	}
}

func counter(t *testing.T, stdout, name string) int64 {
	t.Helper()
	m := regexp.MustCompile(`(?m)^\s+` + regexp.QuoteMeta(name) + ` = (\d+)$`).FindStringSubmatch(stdout)
	if m == nil {
		t.Fatalf("no counter %s in:\n%s", name, stdout)
	}
	n, _ := strconv.ParseInt(m[1], 10, 64)
	return n
}

func TestDefineEnvironment(t *testing.T) {
	path := filepath.Join(t.TempDir(), "env.defn")
	t.Setenv(topobin.DefineEnv, path)
	code, stdout, stderr := runArgs(wordcount.Builder(wordcount.Options{}))
	if code != ExitOK || stdout != "" || stderr != "" {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := topology.Unmarshal(data); err != nil || got.Name != "wordcount" {
		t.Fatalf("Unmarshal = %+v, %v", got, err)
	}
}

// TestDefineRefusesLeftoverArguments: in define mode the topology's main
// has taken its own flags out; an argument left is one it does not know,
// refused in one line with the usage exit code, and no definition is
// written.
func TestDefineRefusesLeftoverArguments(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--nosuchflag", "1"}, "has no flag -nosuchflag"},
		{[]string{"-x=3"}, "has no flag -x"},
		{[]string{"--local"}, "has no flag -local"},
		{[]string{"extra"}, `takes no argument "extra"`},
	} {
		path := filepath.Join(t.TempDir(), "env.defn")
		t.Setenv(topobin.DefineEnv, path)
		code, stdout, stderr := runArgs(wordcount.Builder(wordcount.Options{}), tc.args...)
		if code != ExitUsage || stdout != "" {
			t.Errorf("%q: exit %d, stdout %q; want exit %d", tc.args, code, stdout, ExitUsage)
		}
		if !strings.Contains(stderr, tc.want) || strings.Count(stderr, "\n") != 1 {
			t.Errorf("%q: stderr %q; want one line mentioning %q", tc.args, stderr, tc.want)
		}
		if _, err := os.Stat(path); !os.IsNotExist(err) {
			t.Errorf("%q: a definition was written (%v)", tc.args, err)
		}
	}
}

func TestSplitArgs(t *testing.T) {
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	fs.Int("sentences", 0, "")
	fs.Bool("fast", false, "")
	fs.String("dir", "", "")
	own, rest := SplitArgs([]string{"--sentences", "5", "--local", "--fast", "--duration", "2s", "-dir=x", "extra"}, fs)
	if got, want := strings.Join(own, " "), "--sentences 5 --fast -dir=x"; got != want {
		t.Errorf("own = %q, want %q", got, want)
	}
	if got, want := strings.Join(rest, " "), "--local --duration 2s extra"; got != want {
		t.Errorf("rest = %q, want %q", got, want)
	}
}

func TestInContainer(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want bool
	}{
		{[]string{"--instance", "--task", "3"}, true},
		{[]string{"-instance"}, true},
		{[]string{"--instance=true"}, true},
		{[]string{"--container-process", "--tasks", "1,2"}, true},
		{[]string{"--local", "--duration", "5s"}, false},
		{[]string{"--name", "instance"}, false},
		{[]string{"--name", "instance", "--instance"}, true},
		{nil, false},
	} {
		if got := InContainer(tc.args); got != tc.want {
			t.Errorf("InContainer(%q) = %v, want %v", tc.args, got, tc.want)
		}
	}
}

func TestContainerFlagsCheck(t *testing.T) {
	inst := instanceFlags{container: 1, topologyID: "wc-1", stmgrSocket: "/w/stmgr.sock"}
	f := containerFlags{enabled: true, topology: "wc", tasks: "3, 1,2", tmLocation: "/w/tmanager-location"}
	tasks, err := f.check(&inst)
	if err != nil || fmt.Sprint(tasks) != "[3 1 2]" {
		t.Fatalf("check: %v %v", tasks, err)
	}
	for _, tc := range []struct {
		tasks, want string
	}{
		{"", `--tasks "": "" is not a task id`},
		{"1,x", `--tasks "1,x": "x" is not a task id`},
		{"1,-2", `--tasks "1,-2": "-2" is not a task id`},
		{"4,4", `--tasks "4,4": task 4 appears twice`},
	} {
		g := f
		g.tasks = tc.tasks
		if _, err := g.check(&inst); err == nil || err.Error() != tc.want {
			t.Errorf("--tasks %q: %v, want %q", tc.tasks, err, tc.want)
		}
	}
	if _, err := (&containerFlags{tasks: "1"}).check(&instanceFlags{}); err == nil ||
		!strings.Contains(err.Error(), "--topology is required") || !strings.Contains(err.Error(), "--tmanager-location is required") {
		t.Errorf("missing flags: %v", err)
	}
}
