package mesos

import (
	"errors"
	"fmt"
	"math"
	"net/url"
	"path"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"unicode"

	mesos "github.com/mesos/mesos-go/api/v1/lib"

	"github.com/egret-stream/egret/core/plan"
	"github.com/egret-stream/egret/core/spi"
	"github.com/egret-stream/egret/schedulers/internal/executorcmd"
)

// Names in the Mesos objects of a topology.
const (
	// FrameworkPrefix + the topology name is the framework's name.
	FrameworkPrefix = "egret-"
	// Task labels.
	LabelTopology   = "egret_topology"
	LabelTopologyID = "egret_topology_id"
	LabelContainer  = "egret_container"

	// Files the Mesos fetcher writes into the sandbox.
	packageFile = "topology.tar.gz"
	coreFile    = "egret"
	// The executor's working directory inside the sandbox.
	sandboxWorkDir = "$MESOS_SANDBOX/work"
)

// Port labels of a container; EnvPortPrefix + the upper-cased label is the
// environment variable holding the port (the executor and the daemons
// read EGRET_PORT_TMANAGER, EGRET_PORT_TMANAGER_HTTP, EGRET_PORT_STMGR,
// EGRET_PORT_METRICS, EGRET_PORT_SHELL).
const (
	PortTManager     = "tmanager"
	PortTManagerHTTP = "tmanager_http"
	PortStmgr        = "stmgr"
	PortMetrics      = "metrics"
	PortShell        = "shell"

	EnvPortPrefix     = "EGRET_PORT_"
	EnvContainerIndex = "EGRET_CONTAINER_INDEX"
	EnvHost           = "EGRET_HOST"
)

// FrameworkName returns the name of a topology's framework.
func FrameworkName(topology string) string { return FrameworkPrefix + topology }

// TaskID returns the id of the attempt-th task of container.
func TaskID(topologyID string, container, attempt int) string {
	return fmt.Sprintf("%s.container-%d.%d", topologyID, container, attempt)
}

// containerOfTask returns the container of a task id made by TaskID.
func containerOfTask(id string) (int, bool) {
	i := strings.LastIndexByte(id, '.')
	if i < 0 {
		return 0, false
	}
	j := strings.LastIndexByte(id[:i], '.')
	rest, ok := strings.CutPrefix(id[j+1:i], "container-")
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(rest)
	return n, err == nil && n >= 0
}

// checkJob rejects a job Mesos could not run, naming every problem.
func checkJob(job spi.Job) error {
	var errs []error
	if job.Topology == "" || job.TopologyID == "" {
		errs = append(errs, errors.New("the job has no topology name or id"))
	}
	if strings.IndexFunc(job.Topology+job.TopologyID, func(r rune) bool { return unicode.IsSpace(r) || r == '/' || r == 0 }) >= 0 {
		errs = append(errs, fmt.Errorf("topology %q (id %q): a Mesos task id cannot contain spaces or slashes", job.Topology, job.TopologyID))
	}
	if job.PackageURI == "" {
		errs = append(errs, errors.New("the job has no package URI: the Mesos fetcher downloads the topology package from the uploader's URI"))
	}
	if job.Plan == nil || len(job.Plan.Containers) == 0 {
		errs = append(errs, errors.New("the job has no packing plan containers"))
	} else {
		seen := map[int]bool{}
		for _, c := range job.Plan.Containers {
			if c.ID < 1 {
				errs = append(errs, fmt.Errorf("packing plan container id %d: ids start at 1 (0 is the topology manager's)", c.ID))
			}
			if seen[c.ID] {
				errs = append(errs, fmt.Errorf("packing plan container id %d appears twice", c.ID))
			}
			seen[c.ID] = true
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("mesos scheduler: %w", errors.Join(errs...))
	}
	return nil
}

// wanted returns the resources of every container of job: container 0
// from the config, the others from the plan.
func (s *settings) wanted(job spi.Job) map[int]plan.Resources {
	out := map[int]plan.Resources{0: s.tmanager}
	if job.Plan != nil {
		for _, c := range job.Plan.Containers {
			out[c.ID] = c.Needs()
		}
	}
	return out
}

// portLabels returns the ports of container.
func (s *settings) portLabels(container int) []string {
	out := []string{PortStmgr}
	if container == 0 {
		out = []string{PortTManager, PortTManagerHTTP}
	}
	if s.metricsPort {
		out = append(out, PortMetrics)
	}
	return append(out, PortShell)
}

// need is what a container asks of an offer.
type need struct {
	cpus, mem, disk float64 // cores, MiB, MiB
	ports           int
}

func (s *settings) need(container int, r plan.Resources) need {
	return need{
		cpus:  math.Ceil(r.CPU*1000-1e-6) / 1000, // Mesos keeps three decimals
		mem:   mib(r.RAM),
		disk:  mib(r.Disk),
		ports: len(s.portLabels(container)),
	}
}

// mib converts bytes to whole MiB, rounding up, at least 1.
func mib(b int64) float64 { return float64(max(1, (b+(1<<20)-1)>>20)) }

func (n need) String() string {
	return fmt.Sprintf("cpus %s, mem %s MiB, disk %s MiB and %d ports", num(n.cpus), num(n.mem), num(n.disk), n.ports)
}

func num(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

// take takes n out of the offered resources avail (those allocatable to
// role). It returns the resources to launch with and the ports, or, when
// the offer is too small, what is short.
func take(avail mesos.Resources, role string, n need) (mesos.Resources, []uint64, []string) {
	var taken mesos.Resources
	var short []string
	for _, sc := range []struct {
		name string
		want float64
		unit string
	}{{"cpus", n.cpus, ""}, {"mem", n.mem, " MiB"}, {"disk", n.disk, " MiB"}} {
		var have float64
		for i := range avail {
			r := &avail[i]
			if r.Name == sc.name && r.GetType() == mesos.SCALAR && r.IsAllocatableTo(role) {
				have += r.GetScalar().GetValue()
			}
		}
		if have+1e-9 < sc.want {
			short = append(short, fmt.Sprintf("%s: needs %s%s, the offer has %s%s (short %s%s)", sc.name, num(sc.want), sc.unit, num(round3(have)), sc.unit, num(round3(sc.want-have)), sc.unit))
			continue
		}
		left := sc.want
		for i := range avail {
			r := avail[i]
			if left <= 1e-9 || r.Name != sc.name || r.GetType() != mesos.SCALAR || !r.IsAllocatableTo(role) {
				continue
			}
			amt := min(left, r.GetScalar().GetValue())
			r.Scalar = &mesos.Value_Scalar{Value: round3(amt)}
			taken = append(taken, r)
			left -= amt
		}
	}
	var ports []uint64
	var portRes mesos.Resources
	for i := range avail {
		r := avail[i]
		if len(ports) >= n.ports || r.Name != "ports" || r.GetType() != mesos.RANGES || !r.IsAllocatableTo(role) {
			continue
		}
		var got mesos.Ranges
		for _, rg := range r.GetRanges().GetRange() {
			for p := rg.Begin; p <= rg.End && len(ports) < n.ports; p++ {
				ports = append(ports, p)
				got = append(got, mesos.Value_Range{Begin: p, End: p})
			}
		}
		if len(got) > 0 {
			r.Ranges = &mesos.Value_Ranges{Range: got.Squash()}
			portRes = append(portRes, r)
		}
	}
	if len(ports) < n.ports {
		short = append(short, fmt.Sprintf("ports: needs %d, the offer has %d (short %d)", n.ports, len(ports), n.ports-len(ports)))
	}
	if len(short) > 0 {
		return nil, nil, short
	}
	return append(taken, portRes...), ports, nil
}

func round3(f float64) float64 { return math.Round(f*1000) / 1000 }

// taskSpec is everything a task of a container is built from.
type taskSpec struct {
	job       spi.Job
	container int
	taskID    string
	agentID   string
	hostname  string
	resources mesos.Resources
	ports     []uint64
}

// buildTask builds the TaskInfo of one container: the command executor
// runs `egret executor` in the sandbox, after the Mesos fetcher fetched
// the topology package (and the egret binary, from egret.package.core.uri).
func (s *settings) buildTask(ts taskSpec) mesos.TaskInfo {
	labels := s.portLabels(ts.container)
	env := []mesos.Environment_Variable{
		{Name: EnvContainerIndex, Value: ptr(strconv.Itoa(ts.container))},
		{Name: EnvHost, Value: ptr(ts.hostname)},
	}
	for i, l := range labels {
		env = append(env, mesos.Environment_Variable{Name: EnvPortPrefix + strings.ToUpper(l), Value: ptr(strconv.FormatUint(ts.ports[i], 10))})
	}
	uris := []mesos.CommandInfo_URI{{Value: ts.job.PackageURI, Extract: ptr(false), Cache: ptr(false), OutputFile: ptr(packageFile)}}
	egret := "egret" // from the agent's PATH
	if s.coreURI != "" {
		egret = "./" + coreFile
		if isArchive(s.coreURI) {
			uris = append(uris, mesos.CommandInfo_URI{Value: s.coreURI, Extract: ptr(true)})
		} else {
			uris = append(uris, mesos.CommandInfo_URI{Value: s.coreURI, Executable: ptr(true), Extract: ptr(false), OutputFile: ptr(coreFile)})
		}
	}
	local := ts.job
	local.PackageURI = "$MESOS_SANDBOX/" + packageFile
	args := executorcmd.WithoutEmpty(executorcmd.Args(local, ts.container, sandboxWorkDir, ""))
	if ts.container > 0 {
		args = append(args, "--stmgr-port", "$"+EnvPortPrefix+strings.ToUpper(PortStmgr))
	}
	grace := s.stopGrace + 5e9
	return mesos.TaskInfo{
		Name:      fmt.Sprintf("%s-container-%d", FrameworkName(ts.job.Topology), ts.container),
		TaskID:    mesos.TaskID{Value: ts.taskID},
		AgentID:   mesos.AgentID{Value: ts.agentID},
		Resources: ts.resources,
		Command: &mesos.CommandInfo{
			Shell:       ptr(true),
			Value:       ptr("exec " + shellLine(egret, args)),
			URIs:        uris,
			Environment: &mesos.Environment{Variables: env},
		},
		KillPolicy: &mesos.KillPolicy{GracePeriod: &mesos.DurationInfo{Nanoseconds: int64(grace)}},
		Labels: &mesos.Labels{Labels: []mesos.Label{
			{Key: LabelTopology, Value: ptr(ts.job.Topology)},
			{Key: LabelTopologyID, Value: ptr(ts.job.TopologyID)},
			{Key: LabelContainer, Value: ptr(strconv.Itoa(ts.container))},
		}},
	}
}

// expandable matches the words shellLine leaves for the shell to expand.
var expandable = regexp.MustCompile(`^\$(MESOS_SANDBOX/[A-Za-z0-9._/-]+|EGRET_PORT_[A-Z_]+)$`)

// plainWord matches the words that need no quoting.
var plainWord = regexp.MustCompile(`^[A-Za-z0-9_./=:-]+$`)

// shellLine renders a command line for sh -c: words are single-quoted,
// except the $MESOS_SANDBOX/... and $EGRET_PORT_... references, which are
// double-quoted so that the shell expands them.
func shellLine(cmd string, args []string) string {
	words := make([]string, 0, len(args)+1)
	for _, a := range append([]string{cmd}, args...) {
		switch {
		case expandable.MatchString(a):
			words = append(words, `"`+a+`"`)
		case plainWord.MatchString(a):
			words = append(words, a)
		default:
			words = append(words, "'"+strings.ReplaceAll(a, "'", `'\''`)+"'")
		}
	}
	return strings.Join(words, " ")
}

// isArchive reports whether the Mesos fetcher extracts what uri points at.
func isArchive(uri string) bool {
	p := uri
	if u, err := url.Parse(uri); err == nil && u.Path != "" {
		p = u.Path
	}
	p = strings.ToLower(path.Base(p))
	for _, ext := range []string{".tar.gz", ".tgz", ".tar.bz2", ".tbz2", ".tar.xz", ".txz", ".zip"} {
		if strings.HasSuffix(p, ext) {
			return true
		}
	}
	return false
}

// portsOf maps a task's port labels to the ports in its environment.
func portsOf(ti mesos.TaskInfo) map[string]int {
	out := map[string]int{}
	for _, v := range ti.GetCommand().GetEnvironment().GetVariables() {
		if l, ok := strings.CutPrefix(v.Name, EnvPortPrefix); ok {
			if p, err := strconv.Atoi(v.GetValue()); err == nil {
				out[strings.ToLower(l)] = p
			}
		}
	}
	return out
}

// sortedIDs returns the keys of m in ascending order.
func sortedIDs[V any](m map[int]V) []int {
	out := make([]int, 0, len(m))
	for id := range m {
		out = append(out, id)
	}
	sort.Ints(out)
	return out
}

func ptr[T any](v T) *T { return &v }
