package runner

// The state backends a task may keep its keyed state in
// (topology.state.backend): they register from their init functions, and
// a topology binary runs the tasks.
import (
	_ "github.com/egret-stream/egret/statebackends/heap"
	_ "github.com/egret-stream/egret/statebackends/pebble"
)
