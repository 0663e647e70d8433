// Package fetch is the container side of Egret's package handling: Fetch
// downloads a topology package from the URI an uploader returned (file://,
// plain absolute paths, http://, https://, hdfs:// as Options.HDFSUser),
// verifies its SHA-256 and writes
// it atomically; Extract unpacks a .tar.gz safely into a directory; and
// CreateTarGz builds a deterministic package on the submitter's side.
//
// Extract is written for untrusted archives: entries that would land outside
// the target directory, symlinks that resolve outside it, device nodes and
// absurd sizes are rejected, and every write goes through an os.Root opened
// on the target so even a symlink already present in the target cannot lead
// a write outside it.
package fetch
