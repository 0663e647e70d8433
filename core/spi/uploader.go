package spi

import "context"

// Package describes a topology package to upload: a gzip-compressed tarball
// holding the topology binary, its definition and the cluster config.
type Package struct {
	// Topology, Role and Cluster name the topology the package belongs to.
	Topology string
	Role     string
	Cluster  string
	// Path is the package file on the submitter's disk.
	Path string
	// SHA256 is the hex digest of the file, which containers verify after
	// fetching.
	SHA256 string
}

// Uploader stores a topology package where the topology's containers can
// fetch it, and returns the URI they fetch it from (file://, http://, ...).
type Uploader interface {
	// Upload stores pkg and returns its URI.
	Upload(ctx context.Context, pkg Package) (uri string, err error)
	// Undo removes what Upload stored for uri; it is used when a later
	// step of submit fails, and on kill. Undoing a missing package
	// succeeds.
	Undo(ctx context.Context, uri string) error
	// Close releases the uploader's resources.
	Close() error
}

// URIPreviewer is an optional capability of an Uploader: PreviewURI
// returns the URI Upload would return for pkg, without storing anything
// and without contacting any server. A dry run
// (`egret submit --dry-run --dry-run-format <scheduler>-json`) renders the
// scheduler's job with it; for an uploader without it the job names
// DryRunPackageURI instead.
type URIPreviewer interface {
	PreviewURI(ctx context.Context, pkg Package) (string, error)
}

// DryRunPackageURI is the package URI a dry run renders when the uploader
// cannot preview the URI of an upload (it does not implement
// URIPreviewer). Replace it with the real URI before running the job.
const DryRunPackageURI = "egret-dry-run:package-not-uploaded"
