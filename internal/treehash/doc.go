// Package treehash records what a directory tree holds (every directory,
// file and symbolic link, with its mode and content digest) so that tests
// can assert that an operation changed nothing on disk, or say exactly
// what it changed.
package treehash
