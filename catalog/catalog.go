package catalog

// The built-in backends. Each registers its factory and its config keys
// with core/spi from an init function; a new backend adds one line here.
import (
	_ "github.com/egret-stream/egret/checkpoints/hdfs"
	_ "github.com/egret-stream/egret/checkpoints/localfs"
	_ "github.com/egret-stream/egret/daemons/metricsmgr"
	_ "github.com/egret-stream/egret/packing/ffd"
	_ "github.com/egret-stream/egret/packing/rcrr"
	_ "github.com/egret-stream/egret/packing/roundrobin"
	_ "github.com/egret-stream/egret/schedulers/aurora"
	_ "github.com/egret-stream/egret/schedulers/kubernetes"
	_ "github.com/egret-stream/egret/schedulers/local"
	_ "github.com/egret-stream/egret/schedulers/mesos"
	_ "github.com/egret-stream/egret/schedulers/nomad"
	_ "github.com/egret-stream/egret/schedulers/slurm"
	_ "github.com/egret-stream/egret/schedulers/yarn"
	_ "github.com/egret-stream/egret/statebackends/heap"
	_ "github.com/egret-stream/egret/statebackends/pebble"
	_ "github.com/egret-stream/egret/statemgr/localfs"
	_ "github.com/egret-stream/egret/statemgr/zookeeper"
	_ "github.com/egret-stream/egret/uploaders/hdfs"
	_ "github.com/egret-stream/egret/uploaders/http"
	_ "github.com/egret-stream/egret/uploaders/localfs"
)
