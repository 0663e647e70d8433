package watchstate

import (
	"context"

	"github.com/egret-stream/egret/core/spi"
)

// State is what a watcher knows about one node.
type State struct {
	Exists bool
	// ID identifies this incarnation of the node: a node deleted and
	// created again between two reads gets another ID.
	ID int64
	// Version is the node's data version.
	Version int64
	// Children changes whenever the set of children changes (a child
	// version counter or a hash of the children).
	Children uint64
}

// Diff returns the events that lead from prev to cur, in order.
func Diff(path string, prev, cur State) []spi.Event {
	ev := func(t spi.EventType) spi.Event { return spi.Event{Type: t, Path: path} }
	switch {
	case !prev.Exists && !cur.Exists:
		return nil
	case !prev.Exists:
		return []spi.Event{ev(spi.EventCreated)}
	case !cur.Exists:
		return []spi.Event{ev(spi.EventDeleted)}
	case prev.ID != cur.ID:
		return []spi.Event{ev(spi.EventDeleted), ev(spi.EventCreated)}
	}
	var out []spi.Event
	if prev.Version != cur.Version {
		out = append(out, ev(spi.EventDataChanged))
	}
	if prev.Children != cur.Children {
		out = append(out, ev(spi.EventChildrenChanged))
	}
	return out
}

// Source is how Start observes one node.
type Source struct {
	// Read returns the node's current state.
	Read func(ctx context.Context) (State, error)
	// Wake returns a channel that becomes ready when the state may have
	// changed after the call. Start calls Wake before each Read, so no
	// change between the two is lost.
	Wake func() <-chan struct{}
	// SessionGen returns a counter the backend increases each time its
	// session is lost; an increase is reported as EventSessionLost. May
	// be nil.
	SessionGen func() uint64
	// Done is closed when the session is closed; the watch then ends.
	Done <-chan struct{}
}

// Buffer is the capacity of a watch channel.
const Buffer = 64

// Start reads the initial state synchronously (so that every change after
// Start returns is reported) and then reports differences until ctx ends or
// src.Done is closed; it closes the channel then.
func Start(ctx context.Context, path string, src Source) (<-chan spi.Event, error) {
	wake := src.Wake()
	gen := uint64(0)
	if src.SessionGen != nil {
		gen = src.SessionGen()
	}
	prev, err := src.Read(ctx)
	if err != nil {
		return nil, err
	}
	out := make(chan spi.Event, Buffer)
	go func() {
		defer close(out)
		send := func(e spi.Event) bool {
			select {
			case out <- e:
				return true
			case <-ctx.Done():
			case <-src.Done:
			}
			return false
		}
		for {
			select {
			case <-ctx.Done():
				return
			case <-src.Done:
				return
			case <-wake:
			}
			wake = src.Wake()
			if src.SessionGen != nil {
				if g := src.SessionGen(); g != gen {
					gen = g
					if !send(spi.Event{Type: spi.EventSessionLost, Path: path}) {
						return
					}
				}
			}
			cur, err := src.Read(ctx)
			if err != nil {
				// Transient (or the context ended): try again at the next wake.
				continue
			}
			for _, e := range Diff(path, prev, cur) {
				if !send(e) {
					return
				}
			}
			prev = cur
		}
	}()
	return out, nil
}
