//go:build race

package local_test

// raceEnabled builds the fake egret binary with -race too.
const raceEnabled = true
