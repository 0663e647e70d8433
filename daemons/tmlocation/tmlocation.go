package tmlocation

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/egret-stream/egret/core/spi"
	"github.com/egret-stream/egret/proto/egretpb"
)

// Write makes path hold loc, atomically (a reader sees the old location or
// the new one, never a part); a nil loc removes the file.
func Write(path string, loc *egretpb.TManagerLocation) error {
	if loc == nil {
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("tmanager location: %w", err)
		}
		return nil
	}
	b, err := proto.Marshal(loc)
	if err != nil {
		return fmt.Errorf("tmanager location: encode: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".tmp*")
	if err != nil {
		return fmt.Errorf("tmanager location: %w", err)
	}
	_, err = tmp.Write(b)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		_ = os.Remove(tmp.Name())
		return fmt.Errorf("tmanager location: %w", err)
	}
	return nil
}

// File reads the location an executor writes at Path, re-reading it every
// Poll while watched.
type File struct {
	Path string
	Poll time.Duration
}

// TManagerLocation reads the location of topology's topology manager: an
// error wrapping spi.ErrNotFound while there is no file, spi.ErrCorrupt
// for bytes that are not a location of that topology.
func (f File) TManagerLocation(_ context.Context, topology string) (*egretpb.TManagerLocation, error) {
	b, err := os.ReadFile(f.Path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("tmanager location %s: %w", f.Path, spi.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("tmanager location: %w", err)
	}
	var loc egretpb.TManagerLocation
	if err := proto.Unmarshal(b, &loc); err != nil {
		return nil, fmt.Errorf("tmanager location %s: %w: %v", f.Path, spi.ErrCorrupt, err)
	}
	if loc.GetTopologyName() != topology {
		return nil, fmt.Errorf("tmanager location %s: %w: it is topology %q's, not %q's", f.Path, spi.ErrCorrupt, loc.GetTopologyName(), topology)
	}
	return &loc, nil
}

// WatchTManager returns a channel that receives an event whenever the
// file's contents change (created, rewritten or removed), until ctx ends;
// then it is closed.
func (f File) WatchTManager(ctx context.Context, _ string) (<-chan spi.Event, error) {
	poll := f.Poll
	if poll <= 0 {
		poll = 100 * time.Millisecond
	}
	last, _ := os.ReadFile(f.Path)
	ch := make(chan spi.Event, 1)
	go func() {
		defer close(ch)
		t := time.NewTicker(poll)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			now, err := os.ReadFile(f.Path)
			if err != nil && !errors.Is(err, fs.ErrNotExist) {
				continue
			}
			if bytes.Equal(now, last) {
				continue
			}
			last = now
			select {
			case ch <- spi.Event{Type: spi.EventDataChanged, Path: f.Path}:
			default: // one pending event says the same
			}
		}
	}()
	return ch, nil
}
