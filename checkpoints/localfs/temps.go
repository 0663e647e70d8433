package localfs

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/egret-stream/egret/checkpoints/internal/blob"
	"github.com/egret-stream/egret/core/spi"
	"github.com/egret-stream/egret/internal/safepath"
)

var _ spi.TempRemover = (*Storage)(nil)

// RemoveTemps removes the temporary entries of topology (in its
// directory, its checkpoints' directories and its files directory) last
// modified before olderThan.
func (s *Storage) RemoveTemps(ctx context.Context, topology string, olderThan time.Time) (int, error) {
	if err := s.check(ctx); err != nil {
		return 0, fmt.Errorf("localfs checkpoint remove temps of %s: %w", topology, err)
	}
	if err := blob.CheckTopology(topology); err != nil {
		return 0, err
	}
	top, err := safepath.Join(s.root, topology)
	if err != nil {
		return 0, err
	}
	n := 0
	var errs []error
	var sweep func(dir string, depth int)
	sweep = func(dir string, depth int) {
		entries, err := os.ReadDir(dir)
		if err != nil {
			if !errors.Is(err, fs.ErrNotExist) {
				errs = append(errs, err)
			}
			return
		}
		for _, e := range entries {
			p := filepath.Join(dir, e.Name())
			if !blob.IsTemp(e.Name()) {
				if depth == 0 && e.IsDir() {
					sweep(p, 1)
				}
				continue
			}
			fi, err := e.Info()
			if err != nil || !fi.ModTime().Before(olderThan) {
				continue // gone meanwhile, or being written
			}
			if err := os.RemoveAll(p); err != nil {
				errs = append(errs, err)
				continue
			}
			n++
		}
	}
	sweep(top, 0)
	if err := errors.Join(errs...); err != nil {
		return n, fmt.Errorf("localfs checkpoint remove temps of %s: %w", topology, err)
	}
	return n, nil
}
