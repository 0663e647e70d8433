package aurora

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/url"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/egret-stream/egret/core/plan"
	"github.com/egret-stream/egret/core/spi"
	"github.com/egret-stream/egret/schedulers/aurora/auroraapi"
	"github.com/egret-stream/egret/schedulers/aurora/thermos"
	"github.com/egret-stream/egret/schedulers/internal/executorcmd"
)

// Names in the Aurora job of a topology.
const (
	// TaskName is the Thermos task of every instance.
	TaskName = "egret"
	// ProcessFetchCore downloads the egret binary (only when
	// egret.package.core.uri is set).
	ProcessFetchCore = "fetch_core"
	// ProcessExecutor runs `egret executor`, which fetches the topology
	// package and runs the container's daemons.
	ProcessExecutor = "executor"

	// Named ports every instance asks Aurora for; Thermos binds them as
	// {{thermos.ports[<name>]}}. The executor passes them on to the
	// daemons as EGRET_PORT_<NAME>.
	PortTManager     = "tmanager"      // container 0: the topology manager's server port
	PortTManagerHTTP = "tmanager_http" // container 0: its control and stats API
	PortStmgr        = "stmgr"         // containers 1..N: the stream manager

	// Task metadata keys (shown in the Aurora UI).
	MetaTopology      = "egret_topology"
	MetaTopologyID    = "egret_topology_id"
	MetaPackageURI    = "egret_package_uri"
	MetaPackageSHA256 = "egret_package_sha256"

	// Environment variables of the executor.
	EnvContainerIndex = "EGRET_CONTAINER_INDEX"
	EnvHost           = "EGRET_HOST"
	EnvPortPrefix     = "EGRET_PORT_"

	// workDir is the executor's working directory, relative to the
	// task's sandbox.
	workDir = "container"
	// coreBinary is where fetch_core puts the egret binary in the sandbox.
	coreBinary = "egret"
)

// ports are the named ports of every instance. Aurora gives all instances
// of a job one task config, so each asks for the ports of both container
// kinds and uses those it needs.
var ports = []string{PortStmgr, PortTManager, PortTManagerHTTP}

// Key returns the Aurora job key of a topology.
func Key(role, environ, topology string) *auroraapi.JobKey {
	return &auroraapi.JobKey{Role: role, Environment: environ, Name: topology}
}

// keyString renders a job key as Aurora does: cluster/role/env/name.
func (s *settings) keyString(k *auroraapi.JobKey) string {
	return s.cluster + "/" + k.GetRole() + "/" + k.GetEnvironment() + "/" + k.GetName()
}

// roleEnv returns the role and environment of a job: the job's own (from
// the CLI's cluster/role/env argument), else the config's.
func (s *settings) roleEnv(job spi.Job) (string, string) {
	role, env := job.Role, job.Environ
	if role == "" {
		role = s.role
	}
	if env == "" {
		env = s.environ
	}
	return role, env
}

// jobKey returns the key of topology from the config's role and
// environment, failing when they are not set.
func (s *settings) jobKey(topology string) (*auroraapi.JobKey, error) {
	if err := checkKey(topology, s.role, s.environ); err != nil {
		return nil, err
	}
	return Key(s.role, s.environ, topology), nil
}

// checkKey checks the parts of a job key before anything is sent.
func checkKey(topology, role, environ string) error {
	var errs []error
	for _, p := range []struct{ what, v, hint string }{
		{"topology name", topology, ""},
		{"role", role, fmt.Sprintf(": give it as egret <command> aurora/<role>/<env> ..., or set %s", KeyRole)},
		{"environment", environ, fmt.Sprintf(": give it as egret <command> aurora/<role>/<env> ..., or set %s", KeyEnviron)},
	} {
		switch {
		case p.v == "":
			errs = append(errs, fmt.Errorf("no Aurora %s given%s", p.what, p.hint))
		case !goodIdentifier.MatchString(p.v):
			errs = append(errs, fmt.Errorf("the Aurora %s %q may only hold letters, digits, _, - and dots", p.what, p.v))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("aurora scheduler: %w", oneLine(errs))
	}
	return nil
}

// oneLine joins errors into one line.
func oneLine(errs []error) error {
	msgs := make([]string, len(errs))
	for i, e := range errs {
		msgs[i] = e.Error()
	}
	return errors.New(strings.Join(msgs, "; "))
}

// mustache matches a mustache reference, which Thermos would try to bind.
var mustache = regexp.MustCompile(`\{\{`)

// checkJob rejects a job Aurora could not run, naming the problem.
func (s *settings) checkJob(job spi.Job) error {
	role, env := s.roleEnv(job)
	if err := checkKey(job.Topology, role, env); err != nil {
		return err
	}
	var errs []error
	if job.TopologyID != "" && !goodIdentifier.MatchString(job.TopologyID) {
		errs = append(errs, fmt.Errorf("topology id %q may only hold letters, digits, _, - and dots", job.TopologyID))
	}
	if job.PackageURI == "" {
		errs = append(errs, errors.New("the job has no package URI: the executor fetches the topology package from the uploader's URI"))
	} else if strings.ContainsAny(job.PackageURI, "'\n") || mustache.MatchString(job.PackageURI) {
		errs = append(errs, fmt.Errorf("package URI %q may not contain quotes, newlines or {{ (it goes into a Thermos command line)", job.PackageURI))
	}
	if job.PackageSHA256 != "" && !regexp.MustCompile(`^[0-9a-fA-F]{64}$`).MatchString(job.PackageSHA256) {
		errs = append(errs, fmt.Errorf("package SHA-256 %q is not 64 hex digits", job.PackageSHA256))
	}
	if job.Plan == nil || len(job.Plan.Containers) == 0 {
		errs = append(errs, errors.New("the job has no packing plan containers"))
	} else if err := contiguous(job.Plan.Containers); err != nil {
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		return fmt.Errorf("aurora scheduler: %w", oneLine(errs))
	}
	return nil
}

// contiguous checks that the plan's container ids are 1..N: Aurora numbers
// a job's instances 0..N, and instance i runs container i.
func contiguous(cs []plan.Container) error {
	ids := make([]int, len(cs))
	for i, c := range cs {
		ids[i] = c.ID
	}
	slices.Sort(ids)
	for i, id := range ids {
		if id != i+1 {
			return fmt.Errorf("packing plan container ids are %v: Aurora numbers instances 0..N, so the plan's containers must be 1..%d", ids, len(ids))
		}
	}
	return nil
}

// taskResources returns the resources of the job's one task config: the
// largest cpu, ram and disk of any container (Aurora gives every instance
// of a job the same resources).
func taskResources(cs []plan.Container) plan.Resources {
	var r plan.Resources
	for _, c := range cs {
		q := c.Needs()
		r.CPU = max(r.CPU, q.CPU)
		r.RAM = max(r.RAM, q.RAM)
		r.Disk = max(r.Disk, q.Disk)
	}
	return r
}

// mebibytes converts bytes to whole MiB, rounding up, at least 1.
func mebibytes(b int64) int64 { return max(1, (b+(1<<20)-1)>>20) }

// cores rounds cpu up to a hundredth of a core, at least 0.01.
func cores(cpu float64) float64 { return max(0.01, math.Ceil(cpu*100-1e-9)/100) }

// fits reports whether the resources r fit a task config's resources.
func fits(r plan.Resources, tc *auroraapi.TaskConfig) (bool, string) {
	have := taskConfigResources(tc)
	var short []string
	if cores(r.CPU) > have.CPU+1e-9 {
		short = append(short, fmt.Sprintf("cpu %g > %g", cores(r.CPU), have.CPU))
	}
	if mebibytes(r.RAM) > have.RAM>>20 {
		short = append(short, fmt.Sprintf("ram %d MiB > %d MiB", mebibytes(r.RAM), have.RAM>>20))
	}
	if mebibytes(r.Disk) > have.Disk>>20 {
		short = append(short, fmt.Sprintf("disk %d MiB > %d MiB", mebibytes(r.Disk), have.Disk>>20))
	}
	return len(short) == 0, strings.Join(short, ", ")
}

// taskConfigResources reads cpu, ram and disk (bytes) of a task config.
func taskConfigResources(tc *auroraapi.TaskConfig) plan.Resources {
	var r plan.Resources
	for _, res := range tc.GetResources() {
		switch {
		case res.IsSetNumCpus():
			r.CPU = res.GetNumCpus()
		case res.IsSetRamMb():
			r.RAM = res.GetRamMb() << 20
		case res.IsSetDiskMb():
			r.Disk = res.GetDiskMb() << 20
		}
	}
	return r
}

// thermosJob builds the Thermos job config of a topology.
func (s *settings) thermosJob(job spi.Job) thermos.Job {
	role, env := s.roleEnv(job)
	res := taskResources(job.Plan.Containers)
	var procs []thermos.Process
	if s.coreURI != "" {
		procs = append(procs, process(ProcessFetchCore, s.fetchCoreCmdline()))
	}
	procs = append(procs, process(ProcessExecutor, s.executorCmdline(job)))
	order := make([]string, len(procs))
	for i, p := range procs {
		order[i] = p.Name
	}
	return thermos.Job{
		Name: job.Topology, Role: role, Environment: env, Cluster: s.cluster,
		Instances: len(job.Plan.Containers) + 1, Service: true, MaxTaskFailures: 1,
		Task: thermos.Task{
			Name:        TaskName,
			Processes:   procs,
			Constraints: []thermos.Constraint{{Order: order}},
			Resources:   thermos.Resources{CPU: cores(res.CPU), RAM: mebibytes(res.RAM) << 20, Disk: mebibytes(res.Disk) << 20},
			MaxFailures: 1,
			// The executor stops its daemons within the stop grace.
			FinalizationWait: int(math.Ceil(s.stopGrace.Seconds())) + 5,
		},
	}
}

func process(name, cmdline string) thermos.Process {
	return thermos.Process{Name: name, Cmdline: cmdline, MaxFailures: 1, MinDuration: 5}
}

// fetchCoreCmdline downloads the egret binary (or a .tar.gz holding it)
// into the sandbox.
func (s *settings) fetchCoreCmdline() string {
	get := "curl -fsSL --retry 3 --retry-connrefused"
	if isArchive(s.coreURI) {
		return fmt.Sprintf("%s -o egret-core.tar.gz %s && tar -xzf egret-core.tar.gz %s && rm -f egret-core.tar.gz && chmod +x %s",
			get, shellQuote(s.coreURI), coreBinary, coreBinary)
	}
	return fmt.Sprintf("%s -o %s %s && chmod +x %s", get, coreBinary, shellQuote(s.coreURI), coreBinary)
}

// executorCmdline runs `egret executor` for the instance's container, with
// the instance's ports and host in its environment.
func (s *settings) executorCmdline(job spi.Job) string {
	const instance = "{{mesos.instance}}"
	args := executorcmd.WithoutEmpty(executorcmd.Args(job, 0, workDir, ""))
	for i := range args {
		if args[i] == "--container" && i+1 < len(args) {
			args[i+1] = instance
		}
	}
	args = append(args, "--stmgr-port", portRef(PortStmgr))
	words := []string{"exec", "env",
		EnvContainerIndex + "=" + instance,
		EnvHost + "={{mesos.hostname}}",
	}
	for _, p := range ports {
		words = append(words, EnvPortPrefix+strings.ToUpper(p)+"="+portRef(p))
	}
	egret := "egret" // on the agents' PATH
	if s.coreURI != "" {
		egret = "./" + coreBinary
	}
	words = append(words, egret)
	for _, a := range args {
		if strings.HasPrefix(a, "{{") && strings.HasSuffix(a, "}}") {
			words = append(words, a) // bound by Thermos to a number
		} else {
			words = append(words, shellQuote(a))
		}
	}
	return strings.Join(words, " ")
}

func portRef(name string) string { return "{{thermos.ports[" + name + "]}}" }

// shellQuote quotes a word for bash unless it is made of safe characters.
func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("_-./:=@%+,", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// isArchive reports whether uri names a .tar.gz/.tgz file.
func isArchive(uri string) bool {
	p := uri
	if u, err := url.Parse(uri); err == nil && u.Path != "" {
		p = u.Path
	}
	p = strings.ToLower(path.Base(p))
	return strings.HasSuffix(p, ".tar.gz") || strings.HasSuffix(p, ".tgz")
}

// encodeThermos renders a Thermos job as JSON (indented when indent),
// without HTML escaping (command lines hold && and >).
func encodeThermos(j thermos.Job, indent bool) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if indent {
		enc.SetIndent("", "  ")
	}
	if err := enc.Encode(j); err != nil {
		return nil, fmt.Errorf("aurora scheduler: encode the Thermos job: %w", err)
	}
	return bytes.TrimRight(b.Bytes(), "\n"), nil
}

// buildJob builds the createJob request of a topology: one job, one
// instance per container (instance 0 the topology manager's), every
// instance with the same task config.
func (s *settings) buildJob(job spi.Job) (*auroraapi.JobConfiguration, error) {
	if err := s.checkJob(job); err != nil {
		return nil, err
	}
	tj := s.thermosJob(job)
	data, err := encodeThermos(tj, false)
	if err != nil {
		return nil, err
	}
	key := Key(tj.Role, tj.Environment, tj.Name)
	owner := &auroraapi.Identity{User: s.owner}
	tc := auroraapi.NewTaskConfig()
	tc.Job = key
	tc.Owner = owner
	tc.Container = &auroraapi.Container{Mesos: &auroraapi.MesosContainer{}}
	tc.IsService = true
	tc.MaxTaskFailures = int32(tj.MaxTaskFailures)
	tc.Production = thriftBool(false)
	res := tj.Task.Resources
	tc.Resources = []*auroraapi.Resource{
		{NumCpus: &res.CPU},
		{RamMb: thriftI64(res.RAM >> 20)},
		{DiskMb: thriftI64(res.Disk >> 20)},
	}
	for _, p := range ports {
		tc.Resources = append(tc.Resources, &auroraapi.Resource{NamedPort: thriftString(p)})
	}
	tc.ExecutorConfig = &auroraapi.ExecutorConfig{Name: auroraapi.AURORA_EXECUTOR_NAME, Data: string(data)}
	for _, m := range [][2]string{
		{MetaPackageSHA256, job.PackageSHA256},
		{MetaPackageURI, job.PackageURI},
		{MetaTopology, job.Topology},
		{MetaTopologyID, job.TopologyID},
	} {
		if m[1] != "" {
			tc.Metadata = append(tc.Metadata, &auroraapi.Metadata{Key: m[0], Value: m[1]})
		}
	}
	return &auroraapi.JobConfiguration{Key: key, Owner: owner, TaskConfig: tc, InstanceCount: int32(tj.Instances)}, nil
}

// RenderJob renders the Thermos job of a topology as the JSON job config
// that `aurora job create <cluster>/<role>/<env>/<topology> <file>
// --read-json` reads; it is also the ExecutorConfig.data of the job Egret
// creates. cfg is the scheduler's config.
func RenderJob(job spi.Job, cfg spi.Config) ([]byte, error) {
	s, err := parseSettings(cfg)
	if err != nil {
		return nil, err
	}
	return s.renderJob(job)
}

func (s *settings) renderJob(job spi.Job) ([]byte, error) {
	if err := s.checkJob(job); err != nil {
		return nil, err
	}
	return encodeThermos(s.thermosJob(job), true)
}

func thriftBool(v bool) *bool       { return &v }
func thriftI64(v int64) *int64      { return &v }
func thriftString(v string) *string { return &v }

// instanceIDs renders instance ids compactly: "0..3" or "0, 2, 5".
func instanceIDs(ids []int32) string {
	if len(ids) == 0 {
		return "none"
	}
	s := slices.Clone(ids)
	slices.Sort(s)
	contiguous := true
	for i := range s {
		if s[i] != s[0]+int32(i) {
			contiguous = false
		}
	}
	if contiguous && len(s) > 2 {
		return fmt.Sprintf("%d..%d", s[0], s[len(s)-1])
	}
	out := make([]string, len(s))
	for i, id := range s {
		out[i] = strconv.Itoa(int(id))
	}
	return strings.Join(out, ", ")
}
