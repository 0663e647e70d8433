package spi

import (
	"context"

	"go.uber.org/zap"

	"github.com/egret-stream/egret/core/plan"
)

// Job is everything a scheduler needs to run a topology's containers:
// container 0 runs the topology manager, containers 1..N the plan's
// containers.
type Job struct {
	Topology   string
	TopologyID string
	Cluster    string
	Role       string
	Environ    string
	// PackageURI and PackageSHA256 locate the topology package (from the
	// Uploader).
	PackageURI    string
	PackageSHA256 string
	Plan          *plan.PackingPlan
	// Config is the cluster config the containers run with.
	Config Config
}

// Scheduler runs a topology's containers on a resource manager.
//
// A service-mode scheduler (local, YARN) runs as a long-lived process per
// topology; a library-mode scheduler (Nomad, Kubernetes) runs inside the
// CLI and each call talks to the resource manager directly.
type Scheduler interface {
	// Schedule starts containers 0..N of job.
	Schedule(ctx context.Context, job Job) error
	// Kill stops and removes every container of the topology. Killing a
	// topology that does not run succeeds.
	Kill(ctx context.Context, topology string) error
	// Restart restarts one container, or all when container is
	// AllContainers.
	Restart(ctx context.Context, topology string, container int) error
	// Update applies a new packing plan (job.Plan) to a running topology.
	Update(ctx context.Context, job Job) error
	// JobLinks returns links to the topology's pages in the resource
	// manager's UI (may be empty).
	JobLinks(ctx context.Context, topology string) ([]string, error)
	// Close releases the scheduler's resources; it does not stop the
	// topology.
	Close() error
}

// AllContainers asks Restart to restart every container.
const AllContainers = -1

// Scalable is implemented by schedulers that can add and remove containers
// of a running topology without restarting the others.
type Scalable interface {
	AddContainers(ctx context.Context, topology string, containers []plan.Container) error
	RemoveContainers(ctx context.Context, topology string, containers []plan.Container) error
}

// Replacer is implemented by schedulers whose Update replaces some of the
// containers a new plan keeps, restarting every process in them: those
// whose resources change, on a resource manager that cannot resize a
// running container (a Nomad allocation), or all of them, container 0
// included, where the whole job is replaced (Slurm). ReplacedBy returns
// them (sorted ids) for a change from current to next. egret update then drains and
// pauses the topology around the change and names them, rather than
// claiming that no instance stops.
type Replacer interface {
	ReplacedBy(current, next *plan.PackingPlan) []int
}

// SchedulerFactory builds a scheduler from its config.
type SchedulerFactory func(cfg Config, log *zap.Logger) (Scheduler, error)

// Launcher is implemented by service-mode schedulers: submit calls Launch,
// which starts the scheduler service that then calls Schedule itself (the
// local scheduler starts an `egret scheduler` process). Library-mode
// schedulers do not implement it and submit calls Schedule directly.
type Launcher interface {
	Launch(ctx context.Context, job Job) error
}

// Prober is implemented by schedulers that can tell whether their side of
// a topology is healthy, such as the local scheduler, whose service process
// may have died. The launcher probes before an update, so that a change
// the scheduler cannot apply is refused before anything changes, and to
// report the truth in list, metrics, activate and deactivate.
type Prober interface {
	// Probe returns nil when the scheduler runs the topology's job and can
	// act on it, and otherwise an error that says what is wrong and how to
	// fix it (wrapping ErrNotFound when it runs no job for the topology).
	Probe(ctx context.Context, topology string) error
}

// JobRenderer is implemented by schedulers that can show the exact job
// they would submit to their resource manager, for
// `egret submit --dry-run --dry-run-format <scheduler>-json`.
type JobRenderer interface {
	RenderJob(job Job) ([]byte, error)
}

// Diagnoser is implemented by schedulers that can tell, from the resource
// manager's own records, why containers of a topology do not run (a
// failed allocation and its task events, say). Submit adds the diagnosis
// to the error when the topology is not running by the end of --wait.
type Diagnoser interface {
	// Diagnose returns one line naming each container that does not run
	// as it should, with the resource manager's reason and where to look
	// further; "" when it sees nothing wrong.
	Diagnose(ctx context.Context, topology string) (string, error)
}

// Checker is implemented by backends that can check that what their
// config names is reachable and usable, without changing anything
// (`egret config validate --check-connectivity`). Check returns nil, or
// one line saying what is wrong.
type Checker interface {
	Check(ctx context.Context) error
}

// JobFormatter is implemented by JobRenderers whose job is not JSON: it
// names the one --dry-run-format that prints it ("kubernetes-yaml"),
// accepted instead of "<scheduler>-json" (the scheduler's own name is
// accepted too).
type JobFormatter interface {
	JobFormat() string
}
