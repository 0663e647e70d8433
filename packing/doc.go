// Package packing groups Egret's packing algorithms. The algorithms live in
// the subpackages and register themselves with core/spi when imported:
//
//	roundrobin  round robin over a fixed number of containers (default)
//	ffd         first-fit decreasing into bounded containers
//	rcrr        resource-compliant round robin
//
// packingtest holds the conformance suite every algorithm passes, and render
// prints a packing plan for egret submit --dry-run. README.md in this
// directory describes the config keys, the padding rules and the repacking
// contract.
package packing
