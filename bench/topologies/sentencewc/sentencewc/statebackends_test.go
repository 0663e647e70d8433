package sentencewc

// Stateful components run in process in these tests keep their state in a
// registered state backend (topology.state.backend).
import (
	_ "github.com/egret-stream/egret/statebackends/heap"
	_ "github.com/egret-stream/egret/statebackends/pebble"
)
