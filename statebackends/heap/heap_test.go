package heap_test

import (
	"testing"

	"github.com/egret-stream/egret/statebackends/heap"
	"github.com/egret-stream/egret/statebackends/statebackendtest"
)

func TestConformance(t *testing.T) {
	statebackendtest.Suite{Name: heap.Name}.Run(t)
}

func BenchmarkBackend(b *testing.B) {
	statebackendtest.Suite{Name: heap.Name}.Bench(b)
}
