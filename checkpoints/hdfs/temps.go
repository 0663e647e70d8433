package hdfs

import (
	"context"
	"errors"
	"fmt"
	"path"
	"time"

	"github.com/egret-stream/egret/checkpoints/internal/blob"
	"github.com/egret-stream/egret/core/spi"
	"github.com/egret-stream/egret/internal/hdfsx"
)

var _ spi.TempRemover = (*Storage)(nil)

// RemoveTemps removes the temporary entries of topology (in its
// directory, its checkpoints' directories and its files directory) last
// modified before olderThan.
func (st *Storage) RemoveTemps(ctx context.Context, topology string, olderThan time.Time) (int, error) {
	if err := blob.CheckTopology(topology); err != nil {
		return 0, err
	}
	c, err := st.conn(ctx)
	if err != nil {
		return 0, fmt.Errorf("hdfs checkpoint remove temps of %s in %s: %w", topology, st.where(), err)
	}
	n := 0
	var errs []error
	var sweep func(dir string, depth int)
	sweep = func(dir string, depth int) {
		entries, err := c.ReadDir(dir)
		if err != nil {
			if !hdfsx.IsNotExist(err) {
				errs = append(errs, st.explain(err, "list "+dir))
			}
			return
		}
		for _, e := range entries {
			p := path.Join(dir, e.Name())
			if !blob.IsTemp(e.Name()) {
				if depth == 0 && e.IsDir() {
					sweep(p, 1)
				}
				continue
			}
			if !e.ModTime().Before(olderThan) {
				continue // being written
			}
			if err := c.RemoveAll(p); err != nil && !hdfsx.IsNotExist(err) {
				errs = append(errs, st.explain(err, "delete "+p))
				continue
			}
			n++
		}
	}
	sweep(path.Join(st.s.Directory, topology), 0)
	if err := st.done(c, errors.Join(errs...)); err != nil {
		return n, fmt.Errorf("hdfs checkpoint remove temps of %s in %s: %w", topology, st.where(), err)
	}
	return n, nil
}
