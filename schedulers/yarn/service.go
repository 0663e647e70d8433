package yarn

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/egret-stream/egret/core/plan"
	"github.com/egret-stream/egret/core/spi"
	"github.com/egret-stream/egret/schedulers/internal/executorcmd"
)

// Names in the YARN service of a topology.
const (
	// ComponentTManager runs container 0 (one instance, tmanager-0).
	ComponentTManager = "tmanager"
	// ComponentWorker runs containers 1..N: instance worker-<i> is
	// container i+1 (YARN numbers a component's instances from 0).
	ComponentWorker = "worker"

	// PackageDir is where YARN unpacks the topology package in each
	// container's working directory (a localized ARCHIVE resource).
	PackageDir = "package"
	// CoreBinary is where YARN puts egret.package.core.uri (a localized
	// file), when it is set.
	CoreBinary = "egret"

	// Service configuration properties recording what the service runs;
	// a later command reads them back.
	PropTopology   = "egret.topology"
	PropTopologyID = "egret.topology.id"
	PropCluster    = "egret.cluster"
	PropRole       = "egret.role"
	PropEnviron    = "egret.environ"
	PropPackageURI = "egret.package.uri"
	PropPackageSHA = "egret.package.sha256"

	// Hadoop's own service properties the spec sets.
	propReadinessCheck = "yarn.service.default-readiness-check.enabled"
	propAMMemory       = "yarn.service.am-resource.memory"
)

// ServiceName returns the YARN service name of a topology: YARN wants
// [a-z][a-z0-9-]*, at most 63 characters, so the topology name is
// lower-cased, other characters become '-', and a hash of the exact name
// keeps two topologies that map alike apart.
func ServiceName(topology string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(topology) {
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') || r == '-' {
			b.WriteRune(r)
		} else {
			b.WriteByte('-')
		}
	}
	base := strings.Trim(b.String(), "-")
	if len(base) > 40 {
		base = strings.TrimRight(base[:40], "-")
	}
	sum := sha256.Sum256([]byte(topology))
	return "egret-" + base + "-" + hex.EncodeToString(sum[:])[:8]
}

// InstanceName returns the YARN component instance that runs container c.
func InstanceName(c int) string {
	if c == 0 {
		return ComponentTManager + "-0"
	}
	return ComponentWorker + "-" + strconv.Itoa(c-1)
}

// ContainerOf returns the egret container an instance name runs.
func ContainerOf(instance string) (int, bool) {
	if instance == ComponentTManager+"-0" {
		return 0, true
	}
	s, ok := strings.CutPrefix(instance, ComponentWorker+"-")
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(s)
	return n + 1, err == nil && n >= 0
}

// Service is the YARN Services API's service spec (the fields Egret
// uses), as POSTed to /app/v1/services and read back with GET.
type Service struct {
	Name          string         `json:"name"`
	ID            string         `json:"id,omitempty"`
	Version       string         `json:"version,omitempty"`
	Description   string         `json:"description,omitempty"`
	Queue         string         `json:"queue,omitempty"`
	State         string         `json:"state,omitempty"`
	Components    []Component    `json:"components"`
	Configuration *Configuration `json:"configuration,omitempty"`
}

// Component is one component of a service.
type Component struct {
	Name               string           `json:"name"`
	NumberOfContainers int              `json:"number_of_containers"`
	LaunchCommand      string           `json:"launch_command,omitempty"`
	RestartPolicy      string           `json:"restart_policy,omitempty"`
	Resource           *Resource        `json:"resource,omitempty"`
	Configuration      *Configuration   `json:"configuration,omitempty"`
	PlacementPolicy    *PlacementPolicy `json:"placement_policy,omitempty"`
	State              string           `json:"state,omitempty"`
	Containers         []Container      `json:"containers,omitempty"`
}

// Resource is a container size: whole vcores, memory in MiB (a string).
type Resource struct {
	CPUs   int    `json:"cpus"`
	Memory string `json:"memory"`
}

// Configuration holds a service's or component's properties, environment
// and localized files.
type Configuration struct {
	Properties map[string]string `json:"properties,omitempty"`
	Env        map[string]string `json:"env,omitempty"`
	Files      []ConfigFile      `json:"files,omitempty"`
}

// ConfigFile is a file YARN puts into each container: STATIC files and
// ARCHIVE files (unpacked) are localized from src_file to dest_file in
// the container's working directory.
type ConfigFile struct {
	Type     string `json:"type"`
	SrcFile  string `json:"src_file,omitempty"`
	DestFile string `json:"dest_file"`
}

// PlacementPolicy constrains where a component's containers go.
type PlacementPolicy struct {
	Constraints []PlacementConstraint `json:"constraints"`
}

// PlacementConstraint is one constraint of a placement policy.
type PlacementConstraint struct {
	Type           string   `json:"type"`
	Scope          string   `json:"scope"`
	NodePartitions []string `json:"node_partitions,omitempty"`
}

// Container is a running container of a component.
type Container struct {
	ID                    string `json:"id"`
	State                 string `json:"state"`
	ComponentInstanceName string `json:"component_instance_name"`
	BareHost              string `json:"bare_host,omitempty"`
}

// Live reports whether the container runs (ready or not).
func (c Container) Live() bool {
	return c.State == "RUNNING_BUT_UNREADY" || c.State == "READY" || c.State == "UPGRADING" || c.State == "NEEDS_UPGRADE"
}

// component returns the named component of s, or nil.
func (s *Service) component(name string) *Component {
	for i := range s.Components {
		if s.Components[i].Name == name {
			return &s.Components[i]
		}
	}
	return nil
}

// Containers returns the live containers of s: egret container index →
// YARN container id.
func (s *Service) Containers() map[int]string {
	out := map[int]string{}
	for _, comp := range s.Components {
		for _, c := range comp.Containers {
			if i, ok := ContainerOf(c.ComponentInstanceName); ok && c.Live() {
				out[i] = c.ID
			}
		}
	}
	return out
}

// planned returns the egret container ids s runs by its spec: 0 and
// 1..number of workers.
func (s *Service) planned() []int {
	ids := []int{0}
	if w := s.component(ComponentWorker); w != nil {
		for i := 1; i <= w.NumberOfContainers; i++ {
			ids = append(ids, i)
		}
	}
	return ids
}

// checkJob rejects a job YARN could not run, naming the problem.
func checkJob(job spi.Job) error {
	var errs []error
	if job.Topology == "" {
		errs = append(errs, errors.New("the job has no topology name"))
	}
	if job.PackageURI == "" {
		errs = append(errs, errors.New("the job has no package URI: YARN localizes the topology package from the uploader's URI (use the hdfs uploader)"))
	}
	if err := checkPlan(job.Plan); err != nil {
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		return fmt.Errorf("yarn scheduler: %w", errors.Join(errs...))
	}
	return nil
}

// checkPlan checks that the plan's containers are 1..N: YARN numbers a
// component's instances 0..N-1, and flexing adds or removes the highest.
func checkPlan(p *plan.PackingPlan) error {
	if p == nil || len(p.Containers) == 0 {
		return errors.New("the job has no packing plan containers")
	}
	ids := make([]int, 0, len(p.Containers))
	for _, c := range p.Containers {
		ids = append(ids, c.ID)
	}
	slices.Sort(ids)
	for i, id := range ids {
		if id != i+1 {
			return fmt.Errorf("packing plan containers %v: the yarn scheduler runs containers 1..N without gaps (YARN adds and removes the highest-numbered instances)", ids)
		}
	}
	return nil
}

// workerResource is the size of every worker container: the largest
// container of the plan (a YARN component has one size).
func workerResource(p *plan.PackingPlan) resource {
	var r resource
	for _, c := range p.Containers {
		r = maxResource(r, containerResource(c.Needs()))
	}
	return r
}

// buildService builds the YARN service of a topology.
func (s *settings) buildService(job spi.Job) (*Service, error) {
	if err := checkJob(job); err != nil {
		return nil, err
	}
	files := []ConfigFile{{Type: "ARCHIVE", SrcFile: job.PackageURI, DestFile: PackageDir}}
	egret := "./" + PackageDir + "/" + CoreBinary // egret.package.core.bundle
	if s.coreURI == "" && job.Config.String(keyCoreBundle, "") != "true" {
		return nil, fmt.Errorf("yarn scheduler: the containers need the egret binary: put it in HDFS (hdfs dfs -put egret /egret/egret) and set %s to its hdfs:// URI", keyCoreURI)
	}
	if s.coreURI != "" {
		files = append(files, ConfigFile{Type: "STATIC", SrcFile: s.coreURI, DestFile: CoreBinary})
		egret = "./" + CoreBinary
	}
	svc := &Service{
		Name:        ServiceName(job.Topology),
		Version:     versionOf(job),
		Description: "egret topology " + job.Topology,
		Queue:       s.queue,
		Configuration: &Configuration{Properties: map[string]string{
			propReadinessCheck: "false",
			propAMMemory:       strconv.FormatInt(s.amMemoryMB, 10),
			PropTopology:       job.Topology,
			PropTopologyID:     job.TopologyID,
			PropCluster:        job.Cluster,
			PropRole:           job.Role,
			PropEnviron:        job.Environ,
			PropPackageURI:     job.PackageURI,
			PropPackageSHA:     job.PackageSHA256,
		}},
	}
	w := workerResource(job.Plan)
	for _, c := range []struct {
		name      string
		n         int
		r         resource
		container string
	}{
		{ComponentTManager, 1, s.tmanager, "0"},
		// YARN substitutes ${COMPONENT_ID} (the instance number) before the
		// shell runs the command.
		{ComponentWorker, len(job.Plan.Containers), w, "$((${COMPONENT_ID}+1))"},
	} {
		comp := Component{
			Name:               c.name,
			NumberOfContainers: c.n,
			LaunchCommand:      launchCommand(egret, job, c.container),
			RestartPolicy:      "ALWAYS",
			Resource:           &Resource{CPUs: c.r.vcores, Memory: strconv.FormatInt(c.r.memoryMB, 10)},
			Configuration:      &Configuration{Files: files},
		}
		if s.nodeLabel != "" {
			comp.PlacementPolicy = &PlacementPolicy{Constraints: []PlacementConstraint{{
				Type: "AFFINITY", Scope: "NODE", NodePartitions: []string{s.nodeLabel},
			}}}
		}
		svc.Components = append(svc.Components, comp)
	}
	return svc, nil
}

// versionOf is the service version: the topology id (YARN requires one).
func versionOf(job spi.Job) string {
	if job.TopologyID != "" {
		return job.TopologyID
	}
	return job.Topology
}

// launchCommand is the shell command YARN runs in each container of a
// component: the executor, in the container's working directory, with the
// package YARN unpacked there. The NodeManager's host name is the address
// the container's daemons advertise. container is the container index, or
// a shell expression of it.
func launchCommand(egret string, job spi.Job, container string) string {
	local := job
	local.PackageURI, local.PackageSHA256 = "", "" // YARN localized it
	args := executorcmd.WithoutEmpty(executorcmd.Args(local, 0, "$PWD", PackageDir+"/cluster.json"))
	for i := range args {
		if args[i] == "--container" && i+1 < len(args) {
			args[i+1] = container
		}
	}
	return "EGRET_HOST=$NM_HOST exec " + egret + " " + strings.Join(args, " ")
}
