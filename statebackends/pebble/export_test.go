package pebble

// Memory exports memory to the tests.
var Memory = memory
