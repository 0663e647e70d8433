package example

import (
	"context"
	"fmt"

	"github.com/egret-stream/egret/core/spi"
)

// Observer reads the state file directly, never through the scheduler: it
// stands for the resource manager's own view that `egret plugin verify`
// checks the scheduler against (the plugin serves it with
// plugins.WithObserver).
type Observer struct{ file string }

// NewObserver returns the observer of the state file cfg names.
func NewObserver(cfg spi.Config) (*Observer, error) {
	file := cfg.String(KeyStateFile, "")
	if file == "" {
		return nil, fmt.Errorf("example observer: config key %s is required", KeyStateFile)
	}
	return &Observer{file: file}, nil
}

// Containers returns the running containers of topology: container id →
// allocation id.
func (o *Observer) Containers(_ context.Context, topology string) (map[int]string, error) {
	return Containers(o.file, topology)
}
