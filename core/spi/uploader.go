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
