package pebble_test

import (
	"testing"

	"github.com/egret-stream/egret/statebackends/pebble"
	"github.com/egret-stream/egret/statebackends/statebackendtest"
)

func TestConformance(t *testing.T) {
	statebackendtest.Suite{Name: pebble.Name}.Run(t)
}

func BenchmarkBackend(b *testing.B) {
	statebackendtest.Suite{Name: pebble.Name}.Bench(b)
}
