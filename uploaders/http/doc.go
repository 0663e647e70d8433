// Package http is the "http" uploader and the package server it talks to.
//
// The uploader sends the package with a single HTTP PUT of the raw file to
// <egret.uploader.http.uri><name>, where name is
// <topology>-<role>-<sha256[:12]>.tar.gz, with the digest in the
// X-Egret-Sha256 header and an optional bearer token. PUT was chosen over
// multipart POST because it streams the file without framing, is
// idempotent (a retried upload of the same package is harmless), names the
// object in the URL and works with plain tools (curl -T) and generic
// WebDAV-like servers. The download URL is the server's Location header
// (resolved against the PUT URL), or the PUT URL itself when the server
// sends none. Undo sends DELETE to that URL; 404 counts as success.
//
// Config:
//
//	egret.uploader: http
//	egret.uploader.http.uri: http://host:7780/packages/   # required
//	egret.uploader.http.token: s3cret                    # optional bearer token
//	egret.uploader.http.timeout: 60s                     # longest wait without progress
//	egret.uploader.http.retries: 3                       # extra tries on connection refused
//
// NewServer is the matching server (exposed as `egret serve-packages`). It
// serves /packages/<name>: PUT (or POST, raw or multipart field "file")
// stores, GET and HEAD serve with Content-Length, X-Egret-Sha256 and an ETag,
// DELETE removes. Names are limited to [A-Za-z0-9._-] without a leading dot,
// uploads are capped (2 GiB by default), the client's SHA-256 is verified and
// a mismatch is rejected, and files are written to a temp file and renamed so
// a concurrent GET never sees half a package.
//
// The package shares its name with net/http; import it with an alias:
//
//	import egrethttp "github.com/egret-stream/egret/uploaders/http"
package http
