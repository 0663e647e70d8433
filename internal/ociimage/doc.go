// Package ociimage builds egret's container image without Docker: one
// layer holding the static egret binary (/usr/local/bin/egret), a CA
// certificate bundle (/etc/ssl/certs/ca-certificates.crt) and the
// non-root user egret (uid and gid 65532, /etc/passwd and /etc/group),
// nothing else, with an OCI config that runs egret as that user.
//
// The image is reproducible: every file has the same owner, mode and
// modification time (the Unix epoch, or SOURCE_DATE_EPOCH), the entries
// are written in a fixed order and gzip adds no time stamp, so the same
// binary and certificates give the same digest. It is written as a
// tarball that `ctr images import`, `docker load` and `crane push` read,
// or as an OCI image layout, or pushed to a registry
// (github.com/google/go-containerregistry does the OCI part).
package ociimage
