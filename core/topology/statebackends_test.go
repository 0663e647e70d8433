package topology

// The state backends register their names, which topology.state.backend is
// checked against.
import (
	_ "github.com/egret-stream/egret/statebackends/heap"
	_ "github.com/egret-stream/egret/statebackends/pebble"
)
