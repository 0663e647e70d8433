package fakes

import (
	"context"
	"fmt"
	"os"

	"go.uber.org/zap"

	"github.com/egret-stream/egret/core/spi"
	"github.com/egret-stream/egret/statemgr/memory"
)

// ExitPath is the path whose Get makes an Exiting state manager's process
// exit, to test a plugin that dies in the middle of a call.
const ExitPath = "/exit-now"

// Exiting wraps a state manager: Get of ExitPath exits the process.
type Exiting struct{ spi.StateManager }

// Get implements spi.StateManager.
func (e Exiting) Get(ctx context.Context, path string) (spi.Node, error) {
	if path == ExitPath {
		os.Exit(7)
	}
	return e.StateManager.Get(ctx, path)
}

// NewMemory is a spi.StateManagerFactory: a session of a fresh in-memory
// store (one store per call), wrapped in Exiting. Config key
// "test.session.timeout" sets the session timeout; "test.stdout" is a line
// to print on stdout.
func NewMemory(cfg spi.Config, log *zap.Logger) (spi.StateManager, error) {
	d, err := cfg.Duration("test.session.timeout", memory.DefaultSessionTimeout)
	if err != nil {
		return nil, err
	}
	log.Info("memory state manager configured", zap.Duration("session_timeout", d))
	if msg := cfg.String("test.stdout", ""); msg != "" {
		fmt.Println(msg)
	}
	return Exiting{memory.NewStore(memory.WithSessionTimeout(d)).NewSession()}, nil
}
