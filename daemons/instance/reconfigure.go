package instance

import (
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/egret-stream/egret/api"
	"github.com/egret-stream/egret/core/topology"
)

// reconfigure applies runtime config changes without a restart: the
// spout's max pending and message timeout (sa), the bolt's tick frequency
// (setTick), and the user settings, handed to a component that implements
// api.Reconfigurable. A setting the component's own config fixes wins over
// the topology-level runtime config, as when the instance starts. A
// deleted topology setting keeps its current value until the instance
// restarts.
func (in *Instance) reconfigure(component any, changed map[string]string, sa *spoutAcks, setTick func(time.Duration)) {
	own := in.comp.Config
	user := map[string]string{}
	for k, v := range changed {
		if !strings.HasPrefix(k, "topology.") {
			user[k] = v
			continue
		}
		if _, fixed := own[k]; fixed {
			in.log.Info("runtime setting not applied: the component sets it itself", zap.String("key", k), zap.String("value", v))
			continue
		}
		if v == "" {
			in.log.Info("runtime setting deleted: the current value stays until the instance restarts", zap.String("key", k))
			continue
		}
		switch {
		case k == topology.KeyMaxSpoutPending && sa != nil:
			if n, err := strconv.Atoi(v); err == nil && n >= 0 {
				sa.maxPending = n
				in.log.Info("max spout pending changed", zap.Int("max_pending", n))
			}
		case k == topology.KeyMessageTimeout && sa != nil:
			if d, err := time.ParseDuration(v); err == nil && d > 0 {
				sa.timeout = d
				in.log.Info("message timeout changed", zap.Duration("timeout", d))
			}
		case k == topology.KeyTickFrequency && setTick != nil:
			if d, err := time.ParseDuration(v); err == nil && d >= 0 {
				setTick(d)
				in.log.Info("tick frequency changed", zap.Duration("every", d))
			}
		}
	}
	if len(user) == 0 {
		return
	}
	if r, ok := component.(api.Reconfigurable); ok {
		_ = in.call("Reconfigure", func() error { r.Reconfigure(user); return nil })
		in.metrics.Reconfigurations.Add(1)
	}
}
