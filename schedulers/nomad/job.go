package nomad

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"path"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/hashicorp/nomad/api"

	"github.com/egret-stream/egret/core/plan"
	"github.com/egret-stream/egret/core/spi"
	"github.com/egret-stream/egret/schedulers/internal/executorcmd"
)

// Names in the Nomad job of a topology.
const (
	// TaskName is the one task of every group: the container's executor.
	TaskName = "executor"
	// GroupPrefix + the container id names a container's task group.
	GroupPrefix = "container-"

	// Job meta keys (group meta for MetaContainer). Nomad exposes them to
	// the task as NOMAD_META_<key>.
	MetaTopology      = "egret_topology"
	MetaTopologyID    = "egret_topology_id"
	MetaCluster       = "egret_cluster"
	MetaRole          = "egret_role"
	MetaEnviron       = "egret_environ"
	MetaPackageURI    = "egret_package_uri"
	MetaPackageSHA256 = "egret_package_sha256"
	MetaContainer     = "egret_container"
	// MetaResources (group meta) records the plan's resources of the
	// container, so that an update can tell which containers changed.
	MetaResources = "egret_resources"

	// Port labels of the group network (env-safe: Nomad exposes them as
	// NOMAD_PORT_<label>).
	PortTManager     = "tmanager"      // container 0: the topology manager's server port
	PortTManagerHTTP = "tmanager_http" // container 0: its control and stats API
	PortStmgr        = "stmgr"         // containers 1..N: the stream manager
	PortMetrics      = "metrics"       // every container, with the prometheus sink
	PortShell        = "shell"         // every container: the container's shell (daemons/shell)

	// Paths inside the task directory (NOMAD_TASK_DIR is <task>/local).
	workDir    = "${NOMAD_TASK_DIR}/egret"
	configFile = "${NOMAD_TASK_DIR}/cluster.json"
	packageDst = "local/egret/package"
	configDst  = "local/cluster.json"
	coreDir    = "local/egret-core"

	// The embedded config is JSON written by encoding/json, which escapes
	// '<' and '>' in strings: these template delimiters can never occur in
	// it, so the template renders it verbatim.
	leftDelim  = "<<"
	rightDelim = ">>"
)

// EnvPortPrefix + the upper-cased port label is the environment variable
// holding a daemon's port (EGRET_PORT_STMGR=${NOMAD_PORT_stmgr}); the
// executor hands them to its daemons.
const EnvPortPrefix = "EGRET_PORT_"

// Other environment variables of the executor task.
const (
	EnvContainerIndex = "EGRET_CONTAINER_INDEX"
	EnvHost           = "EGRET_HOST" // the address the container's ports are reachable at
	EnvBindHost       = "EGRET_BIND_HOST"
)

// secretKeys are config keys left out of the config embedded in the job:
// anybody who can read the job can read its template.
var secretKeys = []string{KeyToken}

// JobID returns the Nomad job ID of a topology: its topology id, prefixed
// with the topology name when the id does not already start with it, so
// that a topology's jobs are found by name prefix.
func JobID(job spi.Job) string {
	switch {
	case job.TopologyID == "":
		return job.Topology
	case strings.HasPrefix(job.TopologyID, job.Topology+"-") || job.TopologyID == job.Topology:
		return job.TopologyID
	default:
		return job.Topology + "-" + job.TopologyID
	}
}

// GroupName returns the task group name of container.
func GroupName(container int) string { return GroupPrefix + strconv.Itoa(container) }

// containerOf returns the container id of a task group name.
func containerOf(group string) (int, bool) {
	s, ok := strings.CutPrefix(group, GroupPrefix)
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(s)
	return n, err == nil && n >= 0
}

// JobJSON renders the Nomad job of job as `nomad job validate -json` and
// `nomad job plan -json` read it (and as `nomad job inspect` prints it): {"Job": {...}}, with the fields
// and types of Nomad's HTTP API and unset (null) fields left out. cfg is
// the scheduler's config (egret.nomad.*). It is what `egret submit ...
// --dry-run --dry-run-format nomad-json` prints.
func JobJSON(job spi.Job, cfg spi.Config) ([]byte, error) {
	s, err := parseSettings(cfg)
	if err != nil {
		return nil, err
	}
	j, err := s.buildJob(job)
	if err != nil {
		return nil, err
	}
	return renderJob(j)
}

// renderJob marshals {"Job": j} without null fields, indented.
func renderJob(j *api.Job) ([]byte, error) {
	raw, err := json.Marshal(struct{ Job *api.Job }{j})
	if err != nil {
		return nil, fmt.Errorf("nomad scheduler: encode job: %w", err)
	}
	pruned, err := PruneNulls(raw)
	if err != nil {
		return nil, err
	}
	return append(pruned, '\n'), nil
}

// PruneNulls re-encodes a JSON document without its null object members
// (an unset pointer in the Nomad API types), indented, keys sorted and
// without HTML escaping. It keeps false, 0 and "" values.
func PruneNulls(doc []byte) ([]byte, error) {
	var v any
	dec := json.NewDecoder(strings.NewReader(string(doc)))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("nomad scheduler: decode job JSON: %w", err)
	}
	var out bytes.Buffer
	enc := json.NewEncoder(&out)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(prune(v)); err != nil {
		return nil, fmt.Errorf("nomad scheduler: encode job JSON: %w", err)
	}
	return bytes.TrimRight(out.Bytes(), "\n"), nil
}

func prune(v any) any {
	switch t := v.(type) {
	case map[string]any:
		for k, e := range t {
			if e == nil {
				delete(t, k)
				continue
			}
			t[k] = prune(e)
		}
	case []any:
		for i, e := range t {
			t[i] = prune(e)
		}
	}
	return v
}

// buildJob builds the Nomad job of a topology: one service job, one task
// group per container (0 = topology manager, then the plan's containers).
func (s *settings) buildJob(job spi.Job) (*api.Job, error) {
	if err := checkJob(job); err != nil {
		return nil, err
	}
	j := &api.Job{
		ID:          ptr(JobID(job)),
		Name:        ptr(job.Topology),
		Type:        ptr(api.JobTypeService),
		Datacenters: append([]string(nil), s.datacenters...),
		Meta: map[string]string{
			MetaTopology:      job.Topology,
			MetaTopologyID:    job.TopologyID,
			MetaCluster:       job.Cluster,
			MetaRole:          job.Role,
			MetaEnviron:       job.Environ,
			MetaPackageURI:    job.PackageURI,
			MetaPackageSHA256: job.PackageSHA256,
		},
	}
	if s.namespace != "" { // else the client's (NOMAD_NAMESPACE, or Nomad's default)
		j.Namespace = ptr(s.namespace)
	}
	if s.region != "" {
		j.Region = ptr(s.region)
	}
	if goos := job.Config.String("egret.package.goos", ""); goos != "" {
		j.Constraints = append(j.Constraints, api.NewConstraint("${attr.kernel.name}", "=", goos))
	}
	if goarch := job.Config.String("egret.package.goarch", ""); goarch != "" {
		j.Constraints = append(j.Constraints, api.NewConstraint("${attr.cpu.arch}", "=", goarch))
	}
	tg, err := s.buildGroup(job, 0, s.tmanager)
	if err != nil {
		return nil, err
	}
	j.TaskGroups = append(j.TaskGroups, tg)
	for _, c := range job.Plan.Containers {
		tg, err := s.buildGroup(job, c.ID, c.Needs())
		if err != nil {
			return nil, err
		}
		j.TaskGroups = append(j.TaskGroups, tg)
	}
	return j, nil
}

// checkJob rejects a job Nomad could not run, naming the problem.
func checkJob(job spi.Job) error {
	var errs []error
	if job.Topology == "" {
		errs = append(errs, errors.New("the job has no topology name"))
	}
	if strings.IndexFunc(job.Topology+job.TopologyID, func(r rune) bool { return unicode.IsSpace(r) || r == 0 }) >= 0 {
		errs = append(errs, fmt.Errorf("topology %q (id %q): a Nomad job ID cannot contain spaces", job.Topology, job.TopologyID))
	}
	if job.PackageURI == "" {
		errs = append(errs, errors.New("the job has no package URI: Nomad fetches the topology package from the uploader's URI, so the package must be uploaded first"))
	} else if u, err := url.Parse(job.PackageURI); job.PackageURI != spi.DryRunPackageURI && (err != nil || !slices.Contains(getterSchemes, u.Scheme)) {
		errs = append(errs, fmt.Errorf("package URI %q: Nomad's artifact getter cannot download it (no file scheme in Nomad 1.6); use an uploader the clients can download from, such as http with egret serve-packages", job.PackageURI))
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
		return fmt.Errorf("nomad scheduler: %w", errors.Join(errs...))
	}
	return nil
}

// resourcesMeta renders resources for MetaResources.
func resourcesMeta(r plan.Resources) string {
	return fmt.Sprintf("cpu=%s ram=%d disk=%d", strconv.FormatFloat(r.CPU, 'g', -1, 64), r.RAM, r.Disk)
}

// updatedJob returns the job of a new packing plan for the running job
// cur: container 0 and every container whose resources did not change keep
// their task group exactly as it runs (so Nomad leaves them alone, even if
// the config of the caller differs from the submitter's); new and resized
// containers get new groups, built with the running job's package and
// cluster config; containers gone from the plan lose theirs.
func (s *settings) updatedJob(cur *api.Job, p *plan.PackingPlan) (*api.Job, error) {
	base, err := jobFromNomad(cur)
	if err != nil {
		return nil, err
	}
	base.Plan = p
	if err := checkJob(base); err != nil {
		return nil, err
	}
	running := map[int]*api.TaskGroup{}
	for _, tg := range cur.TaskGroups {
		if c, ok := containerOf(deref(tg.Name)); ok {
			running[c] = tg
		}
	}
	next := copyJob(cur)
	next.TaskGroups = nil
	if tg := running[0]; tg != nil {
		next.TaskGroups = append(next.TaskGroups, tg)
	} else {
		tg, err := s.buildGroup(base, 0, s.tmanager)
		if err != nil {
			return nil, err
		}
		next.TaskGroups = append(next.TaskGroups, tg)
	}
	for _, c := range p.Containers {
		res := c.Needs()
		if tg := running[c.ID]; tg != nil && tg.Meta[MetaResources] == resourcesMeta(res) {
			next.TaskGroups = append(next.TaskGroups, tg)
			continue
		}
		tg, err := s.buildGroup(base, c.ID, res)
		if err != nil {
			return nil, err
		}
		next.TaskGroups = append(next.TaskGroups, tg)
	}
	return next, nil
}

// copyJob returns a copy of a registered job that can be registered again
// (the task groups are shared, not copied: callers only add or drop).
//
// A job read back from Nomad has a job-level update block with only
// stagger and max_parallel set and every other field zero (Nomad pushed
// the rest into the groups at registration). Sent back, Nomad would merge
// those zeros into every group without an update block of its own, the
// new ones, and reject them ("Invalid health check given"). The groups
// read back carry their complete update block, so the job's is dropped:
// new groups get Nomad's defaults, as at submission.
func copyJob(j *api.Job) *api.Job {
	c := *j
	c.TaskGroups = slices.Clone(j.TaskGroups)
	c.Update = nil
	return &c
}

// portLabels returns the dynamic ports of container.
func (s *settings) portLabels(container int) []string {
	var out []string
	if container == 0 {
		out = append(out, PortTManager, PortTManagerHTTP)
	} else {
		out = append(out, PortStmgr)
	}
	if s.metricsPort {
		out = append(out, PortMetrics)
	}
	return append(out, PortShell)
}

// buildGroup builds the task group of one container.
func (s *settings) buildGroup(job spi.Job, container int, res plan.Resources) (*api.TaskGroup, error) {
	task, err := s.buildTask(job, container, res)
	if err != nil {
		return nil, err
	}
	net := &api.NetworkResource{Mode: s.networkMode}
	for _, l := range s.portLabels(container) {
		net.DynamicPorts = append(net.DynamicPorts, api.Port{Label: l})
	}
	tg := &api.TaskGroup{
		Name:     ptr(GroupName(container)),
		Count:    ptr(1),
		Tasks:    []*api.Task{task},
		Networks: []*api.NetworkResource{net},
		Meta:     map[string]string{MetaContainer: strconv.Itoa(container), MetaResources: resourcesMeta(res)},
		RestartPolicy: &api.RestartPolicy{
			Attempts: ptr(s.restartAttempts),
			Interval: ptr(s.restartInterval),
			Delay:    ptr(s.restartDelay),
			Mode:     ptr(s.restartMode),
		},
		ReschedulePolicy: &api.ReschedulePolicy{
			Delay:         ptr(s.rescheduleDelay),
			DelayFunction: ptr(s.rescheduleFunction),
			MaxDelay:      ptr(s.rescheduleMax),
		},
		EphemeralDisk: &api.EphemeralDisk{SizeMB: ptr(mebibytes(res.Disk, 10))},
	}
	if s.rescheduleAttempts == 0 {
		tg.ReschedulePolicy.Unlimited = ptr(true)
	} else {
		tg.ReschedulePolicy.Unlimited = ptr(false)
		tg.ReschedulePolicy.Attempts = ptr(s.rescheduleAttempts)
		tg.ReschedulePolicy.Interval = ptr(s.rescheduleInterval)
	}
	if s.metricsPort && s.metricsService {
		tg.Services = []*api.Service{{
			Name:      serviceName(job.Topology),
			Tags:      append(append([]string(nil), s.serviceTags...), job.Topology, GroupName(container)),
			PortLabel: PortMetrics,
			Provider:  s.serviceProvider,
			// The check shows in the service catalog but does not decide
			// whether an allocation is healthy: a deployment never waits
			// for it.
			Checks: []api.ServiceCheck{{
				Name: "metrics port", Type: "tcp", PortLabel: PortMetrics,
				Interval: s.serviceInterval, Timeout: s.serviceTimeout, OnUpdate: "ignore",
			}},
		}}
	}
	return tg, nil
}

// buildTask builds the executor task of one container.
func (s *settings) buildTask(job spi.Job, container int, res plan.Resources) (*api.Task, error) {
	cfgJSON, err := embeddedConfig(job.Config)
	if err != nil {
		return nil, err
	}
	// Nomad fetches and extracts the package (verifying its checksum), so
	// the executor finds it extracted and is given no URI.
	local := job
	local.PackageURI, local.PackageSHA256 = "", ""
	args := executorcmd.WithoutEmpty(executorcmd.Args(local, container, workDir, configFile))
	if container > 0 {
		args = append(args, "--stmgr-port", "${NOMAD_PORT_"+PortStmgr+"}")
	}

	pkg := &api.TaskArtifact{
		GetterSource:  ptr(job.PackageURI),
		RelativeDest:  ptr(packageDst),
		GetterOptions: map[string]string{"archive": "tar.gz"},
	}
	if job.PackageSHA256 != "" {
		pkg.GetterOptions["checksum"] = "sha256:" + job.PackageSHA256
	}
	artifacts := []*api.TaskArtifact{pkg}
	var command string
	switch {
	case s.coreURI != "":
		command = "${NOMAD_TASK_DIR}/egret-core/egret"
		core := &api.TaskArtifact{GetterSource: ptr(s.coreURI), RelativeDest: ptr(coreDir)}
		if !isArchive(s.coreURI) {
			// A plain binary: Nomad sets the executable bit of a task
			// command inside the task directory.
			core.GetterMode = ptr("file")
			core.RelativeDest = ptr(coreDir + "/egret")
		}
		artifacts = append(artifacts, core)
	case s.driver == "docker":
		command = "egret" // from the image
	default:
		// egret.package.core.bundle: the launcher put its own egret into
		// the topology package (launcher.PackageEgret).
		command = "${NOMAD_TASK_DIR}/egret/package/egret"
	}

	labels := s.portLabels(container)
	driverCfg := map[string]any{"command": command, "args": args}
	if s.driver == "docker" {
		driverCfg["image"] = s.dockerImage
		driverCfg["ports"] = labels
	}
	env := map[string]string{
		EnvContainerIndex: strconv.Itoa(container),
		EnvHost:           "${NOMAD_IP_" + labels[0] + "}",
	}
	if s.networkMode == "host" && s.driver != "docker" {
		// The daemons listen on the address Nomad gave the ports, not on
		// every interface of the client.
		env[EnvBindHost] = "${NOMAD_IP_" + labels[0] + "}"
	}
	for _, l := range labels {
		env[EnvPortPrefix+strings.ToUpper(l)] = "${NOMAD_PORT_" + l + "}"
	}
	return &api.Task{
		Name:   TaskName,
		Driver: s.driver,
		Config: driverCfg,
		Env:    env,
		Resources: &api.Resources{
			CPU:      ptr(s.mhz(res.CPU)),
			MemoryMB: ptr(mebibytes(res.RAM, 10)),
		},
		Artifacts: artifacts,
		Templates: []*api.Template{{
			EmbeddedTmpl: ptr(cfgJSON),
			DestPath:     ptr(configDst),
			ChangeMode:   ptr("noop"),
			Perms:        ptr("0600"),
			LeftDelim:    ptr(leftDelim),
			RightDelim:   ptr(rightDelim),
		}},
		// The executor stops its daemons within the stop grace.
		KillTimeout: ptr(s.stopGrace + 5*time.Second),
		KillSignal:  "SIGTERM",
	}, nil
}

// embeddedConfig is the cluster config written to local/cluster.json.
func embeddedConfig(cfg spi.Config) (string, error) {
	c := cfg.Clone()
	for _, k := range secretKeys {
		delete(c, k)
	}
	if c == nil {
		c = spi.Config{}
	}
	b, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return "", fmt.Errorf("nomad scheduler: encode the cluster config: %w", err)
	}
	if strings.Contains(string(b), leftDelim) || strings.Contains(string(b), rightDelim) {
		return "", errors.New("nomad scheduler: the encoded cluster config contains a template delimiter") // cannot happen: encoding/json escapes < and >
	}
	return string(b), nil
}

// configFromJob reads the embedded cluster config back from a registered
// job (any group's template).
func configFromJob(j *api.Job) (spi.Config, error) {
	for _, tg := range j.TaskGroups {
		for _, t := range tg.Tasks {
			for _, tmpl := range t.Templates {
				if tmpl.DestPath == nil || *tmpl.DestPath != configDst || tmpl.EmbeddedTmpl == nil {
					continue
				}
				var c spi.Config
				if err := json.Unmarshal([]byte(*tmpl.EmbeddedTmpl), &c); err != nil {
					return nil, fmt.Errorf("the config template of group %s is not JSON: %w", deref(tg.Name), err)
				}
				return c, nil
			}
		}
	}
	return nil, fmt.Errorf("job %s has no %s template", deref(j.ID), configDst)
}

// jobFromNomad rebuilds the parts of the spi.Job that built a registered
// job (everything but the plan).
func jobFromNomad(j *api.Job) (spi.Job, error) {
	m := j.Meta
	if m[MetaTopology] == "" {
		return spi.Job{}, fmt.Errorf("the Nomad job %s has no %s meta: it was not submitted by egret", deref(j.ID), MetaTopology)
	}
	cfg, err := configFromJob(j)
	if err != nil {
		return spi.Job{}, err
	}
	return spi.Job{
		Topology: m[MetaTopology], TopologyID: m[MetaTopologyID], Cluster: m[MetaCluster], Role: m[MetaRole],
		Environ: m[MetaEnviron], PackageURI: m[MetaPackageURI], PackageSHA256: m[MetaPackageSHA256], Config: cfg,
	}, nil
}

// containersOf lists the container ids of a job's groups, ascending.
func containersOf(j *api.Job) []int {
	var out []int
	for _, tg := range j.TaskGroups {
		if c, ok := containerOf(deref(tg.Name)); ok {
			out = append(out, c)
		}
	}
	sort.Ints(out)
	return out
}

// isArchive reports whether go-getter unpacks what uri points at.
func isArchive(uri string) bool {
	p := uri
	if u, err := url.Parse(uri); err == nil && u.Path != "" {
		p = u.Path
	}
	p = strings.ToLower(path.Base(p))
	for _, ext := range []string{".tar.gz", ".tgz", ".zip", ".tar.bz2", ".tbz2", ".tar.xz", ".txz", ".tar.zst"} {
		if strings.HasSuffix(p, ext) {
			return true
		}
	}
	return false
}

// serviceName returns a DNS-safe service name for the topology's metrics.
func serviceName(topology string) string {
	var b strings.Builder
	b.WriteString("egret-metrics-")
	for _, r := range strings.ToLower(topology) {
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') || r == '-' {
			b.WriteRune(r)
		} else {
			b.WriteByte('-')
		}
	}
	n := strings.TrimRight(b.String(), "-")
	if len(n) > 63 {
		n = strings.TrimRight(n[:63], "-")
	}
	return n
}

func ptr[T any](v T) *T { return &v }

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}
