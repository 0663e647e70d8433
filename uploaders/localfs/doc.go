// Package localfs is the "localfs" uploader: it copies the topology package
// into a directory that the topology's containers can read (the local
// machine, or a shared file system such as NFS mounted at the same path on
// every host) and returns a file:// URI.
//
// Config:
//
//	egret.uploader: localfs
//	egret.uploader.localfs.directory: ${HOME}/.egret/repository/${CLUSTER}/${ROLE}/${TOPOLOGY}   # required
//
// The package is stored as <directory>/<topology>-<role>-<sha256[:12]>.tar.gz,
// written to a temp file in the same directory and renamed into place, so a
// container never reads half a package.
package localfs
