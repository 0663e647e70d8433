//go:build !unix

package example

// lockFile does nothing where flock is missing: run one CLI at a time.
func lockFile(string) (func(), error) { return func() {}, nil }
