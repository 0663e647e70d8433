// Command keysread checks that every documented config key was read: it
// takes the directory `make test` ran the tests with as
// $EGRET_KEYS_READ_DIR (every process that read a key through
// core/spi.Config appended it there, once per process), and exits 1 with
// one line per key of the cluster config schema (conf.Schema: core and
// backend keys, conf/REFERENCE.md) that no test and no daemon they started
// read. A key listed is either not implemented (implement it or remove it
// from the schema) or not exercised by any test (add one).
//
//	go run ./scripts/keysread DIR
package main
