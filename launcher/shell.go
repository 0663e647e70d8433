package launcher

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sort"
	"strconv"

	"github.com/egret-stream/egret/core/names"
	"github.com/egret-stream/egret/core/spi"
)

// Shell is where one container's shell listens, with the topology's
// secret for its protected endpoints.
type Shell struct {
	Container int
	// URL is http://host:port, without a trailing slash.
	URL    string
	Secret []byte
}

// Shell finds the shell of a container of a running topology through the
// state manager.
func (l *Launcher) Shell(ctx context.Context, name string, container int) (Shell, error) {
	if err := checkTopology(name); err != nil {
		return Shell{}, err
	}
	if container < 0 {
		return Shell{}, badInput(&names.Error{Kind: names.Container, Value: strconv.Itoa(container)})
	}
	_, store, closeSM, err := l.session(ctx, name)
	if err != nil {
		return Shell{}, err
	}
	defer closeSM()
	if err := requireRunning(ctx, store, name); err != nil {
		return Shell{}, err
	}
	loc, err := store.ShellLocation(ctx, name, container)
	if errors.Is(err, spi.ErrNotFound) {
		return Shell{}, fmt.Errorf("container %d of topology %q has no shell running (is the container up? `egret list` shows the topology's state)", container, name)
	}
	if err != nil {
		return Shell{}, killHint(name, err)
	}
	secret, err := store.Secret(ctx, name)
	if err != nil && !errors.Is(err, spi.ErrNotFound) {
		return Shell{}, killHint(name, err)
	}
	return Shell{Container: container, URL: "http://" + net.JoinHostPort(loc.GetHost(), strconv.Itoa(int(loc.GetPort()))), Secret: secret}, nil
}

// Containers lists the containers of a running topology: 0 and those of
// its packing plan, ascending.
func (l *Launcher) Containers(ctx context.Context, name string) ([]int, error) {
	if err := checkTopology(name); err != nil {
		return nil, err
	}
	_, store, closeSM, err := l.session(ctx, name)
	if err != nil {
		return nil, err
	}
	defer closeSM()
	if err := requireRunning(ctx, store, name); err != nil {
		return nil, err
	}
	p, _, err := store.PackingPlan(ctx, name)
	if err != nil {
		return nil, killHint(name, err)
	}
	out := []int{0}
	for _, c := range p.Containers {
		out = append(out, c.ID)
	}
	sort.Ints(out)
	return out, nil
}

// InstanceContainer finds the container running a task of component;
// task < 0 picks the component's first task. It returns the container
// and the task.
func (l *Launcher) InstanceContainer(ctx context.Context, name, component string, task int) (int, int, error) {
	if err := checkTopology(name); err != nil {
		return 0, 0, err
	}
	if err := names.Check(names.Component, component); err != nil {
		return 0, 0, badInput(err)
	}
	_, store, closeSM, err := l.session(ctx, name)
	if err != nil {
		return 0, 0, err
	}
	defer closeSM()
	if err := requireRunning(ctx, store, name); err != nil {
		return 0, 0, err
	}
	p, _, err := store.PackingPlan(ctx, name)
	if err != nil {
		return 0, 0, killHint(name, err)
	}
	bestC, bestT, found := 0, 0, false
	var tasks []int
	for _, c := range p.Containers {
		for _, in := range c.Instances {
			if in.Component != component {
				continue
			}
			tasks = append(tasks, in.TaskID)
			if (task < 0 && (!found || in.TaskID < bestT)) || in.TaskID == task {
				bestC, bestT, found = c.ID, in.TaskID, true
			}
		}
	}
	switch {
	case len(tasks) == 0:
		return 0, 0, badInput(fmt.Errorf("topology %q has no component %q", name, component))
	case !found:
		sort.Ints(tasks)
		return 0, 0, badInput(fmt.Errorf("component %q of topology %q has no task %d (its tasks: %v)", component, name, task, tasks))
	}
	return bestC, bestT, nil
}
