// Package nomadtest is an in-memory fake of the parts of the Nomad HTTP
// API that Egret's Nomad scheduler uses, served by net/http/httptest. It
// follows the documented endpoints, methods, query parameters, headers and
// JSON bodies (the types of github.com/hashicorp/nomad/api, which are
// Nomad's wire format) and keeps state, so that what a client does is
// observable:
//
//	PUT|POST /v1/jobs                          register (EnforceIndex honoured)
//	GET      /v1/jobs?prefix=&meta=            list job stubs
//	GET      /v1/job/:id                       read a job
//	DELETE   /v1/job/:id?purge=                deregister (stop, or purge)
//	GET      /v1/job/:id/allocations?all=      allocation stubs of a job
//	GET      /v1/job/:id/evaluations           evaluations of a job
//	GET      /v1/evaluation/:id                read an evaluation
//	GET      /v1/deployment/:id                read a deployment
//	PUT|POST /v1/client/allocation/:id/restart restart tasks in place
//
// Every request honours ?namespace= (default "default") and ?region=; when
// the server has an ACL token, requests without it get 403 as from a Nomad
// with ACLs enabled. Query responses carry X-Nomad-Index,
// X-Nomad-KnownLeader and X-Nomad-LastContact.
//
// A registered job is first canonicalized as Nomad's HTTP endpoint does
// (the api package's Job.Canonicalize: defaults filled in, the job's
// update block pushed into every group) and validated with Nomad's own
// rules and messages for the fields Egret uses, update blocks included
// (and a few stricter ones: an interpolated ${NOMAD_PORT_x} must name a
// port of the group); a violation answers 500 with Nomad's nested
// go-multierror body, over many lines. A job reads back as Nomad 1.6.5
// returns it: with a job-level update block holding only stagger and
// max_parallel and zeros elsewhere, the server's defaults, and the
// constraints Nomad implies (the kill signal, Nomad's or Consul's service
// discovery); testdata holds a job as a real 1.6.5 agent read it back, and
// a test keeps the fake equal to it. Each registration is evaluated at once: every task
// group is placed on the fake's nodes (datacenter, driver, constraints,
// Consul, cpu/memory/disk capacity) and becomes an allocation, or is
// reported in the evaluation's FailedTGAllocs with Nomad's metrics
// (DimensionExhausted, ConstraintFiltered, ...). Nodes have no Consul
// unless they say so, like a stock agent. On an update, a task group whose
// definition did not change keeps its allocation; a changed one is
// replaced (a destructive update); a removed one is stopped; a changed job
// meta replaces every group, as in Nomad; and a deployment is recorded,
// successful when every new allocation runs healthy.
//
// Starting a task does what a Nomad 1.6 client does before the driver
// runs: its artifacts are downloaded (http and https, from the network or
// from WithArtifacts; s3, gcs, git and hg are assumed to work; any other
// scheme, file:// included, fails), checksums verified and archives
// unpacked, and a raw_exec or exec command inside the task directory must
// be among the files that produced. A failure fails the allocation with
// Nomad's task events ("Failed Artifact Download", "Driver Failure" with
// Nomad's texts). A service check that deployments wait for never passes
// (nothing listens in the fake), so such an allocation is unhealthy. An
// allocation restarted in place lists as pending once, as while its task
// starts again. Allocations never fail later by themselves.
package nomadtest
