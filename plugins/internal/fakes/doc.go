// Package fakes holds small SPI implementations that the plugin tests serve
// both in process and from the test plugin binary: a recording scheduler,
// a one-container-per-component packing algorithm, a state manager
// that can be told to crash and a metrics sink writing JSON lines.
package fakes
