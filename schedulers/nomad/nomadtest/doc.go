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
// A registered job is validated with Nomad's own rules for the fields
// Egret uses (and a few stricter ones: an interpolated ${NOMAD_PORT_x}
// must name a port of the group); a violation answers 500 with a
// multi-error body, as Nomad does. Each registration is evaluated at once:
// every task group is placed on the fake's nodes (datacenter, driver,
// constraints, Consul, cpu/memory/disk capacity) and becomes a running
// allocation, or is reported in the evaluation's FailedTGAllocs with
// Nomad's metrics (DimensionExhausted, ConstraintFiltered, ...). On an
// update, a task group whose definition did not change keeps its
// allocation; a changed one is replaced (a destructive update); a removed
// one is stopped. A changed job meta replaces every group, as in Nomad.
//
// Allocations never fail by themselves and artifacts are not fetched:
// the fake checks what the job asks for, not that it would run.
package nomadtest
