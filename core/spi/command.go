package spi

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"

	"go.uber.org/zap"
)

// Command is a hidden egret subcommand through which a service-mode
// backend runs its own service (the Mesos scheduler's framework: egret
// mesos-framework; the local scheduler's service: egret scheduler). The
// backend registers it beside its factory (RegisterCommand); the CLI adds
// every registered command, so a backend that needs one touches no file
// outside its folder.
type Command struct {
	Name  string // the subcommand, "mesos-framework"
	Args  string // its arguments for the usage line, "--work-dir W"
	Short string
	// Run runs the command with its arguments, which the CLI does not
	// parse, until ctx ends (SIGTERM, SIGINT). An error wrapping ErrUsage
	// is bad input (the CLI exits 2), any other a failure (exit 1).
	Run func(ctx context.Context, args []string, env CommandEnv) error
}

// CommandEnv is what the CLI gives a backend's command.
type CommandEnv struct {
	Log *zap.Logger
	// StateManager opens a session of the state manager cfg selects
	// (egret.statemgr: a built-in one or a plugin); the command closes it.
	StateManager func(ctx context.Context, cfg Config) (StateManager, error)
}

// ErrUsage marks a command's error caused by its command line (see
// Usage).
var ErrUsage = errors.New("bad command line")

// Usage marks err as caused by the command line: errors.Is(Usage(err),
// ErrUsage) holds, and the message stays err's.
func Usage(err error) error { return usageErr{err} }

type usageErr struct{ error }

func (e usageErr) Unwrap() []error { return []error{e.error, ErrUsage} }

var commands = struct {
	mu sync.RWMutex
	m  map[string]Command
}{m: map[string]Command{}}

// RegisterCommand registers a backend's hidden command; a duplicate name
// is a programming error and panics.
func RegisterCommand(c Command) {
	commands.mu.Lock()
	defer commands.mu.Unlock()
	if _, dup := commands.m[c.Name]; dup || c.Name == "" || c.Run == nil {
		panic(fmt.Sprintf("spi: command %q registered twice or incomplete", c.Name))
	}
	commands.m[c.Name] = c
}

// Commands lists the registered commands by name.
func Commands() []Command {
	commands.mu.RLock()
	defer commands.mu.RUnlock()
	out := make([]Command, 0, len(commands.m))
	for _, c := range commands.m {
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}
