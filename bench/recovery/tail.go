package recovery

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"

	"github.com/egret-stream/egret/bench/topologies/ackcheck/ackcheck"
)

// tail reads what was appended to the files matching a glob since the last
// call, as whole lines (a line still being written waits for its newline).
type tail struct {
	dir, glob string
	off       map[string]int64
	rest      map[string][]byte
}

func newTail(dir, glob string) *tail {
	return &tail{dir: dir, glob: glob, off: map[string]int64{}, rest: map[string][]byte{}}
}

// poll calls fn with each new complete line of each file (without the
// newline).
func (t *tail) poll(fn func(file string, line []byte) error) error {
	files, err := filepath.Glob(filepath.Join(t.dir, t.glob))
	if err != nil {
		return err
	}
	for _, path := range files {
		if err := t.pollFile(path, fn); err != nil {
			return err
		}
	}
	return nil
}

func (t *tail) pollFile(path string, fn func(string, []byte) error) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	off := t.off[path]
	if st, err := f.Stat(); err == nil && st.Size() < off {
		// Truncated (a torn line cut by a restarted writer): the lines
		// before the cut were read already; go on from the new end.
		off = st.Size()
		t.rest[path] = nil
	}
	if _, err := f.Seek(off, io.SeekStart); err != nil {
		return err
	}
	b, err := io.ReadAll(f)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	t.off[path] = off + int64(len(b))
	data := b
	if r := t.rest[path]; len(r) > 0 {
		data = append(r, b...)
	}
	name := filepath.Base(path)
	for {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			break
		}
		if err := fn(name, data[:i]); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		data = data[i+1:]
	}
	t.rest[path] = append(t.rest[path][:0], data...)
	return nil
}

// lineCounter counts the lines of the files matching a glob.
type lineCounter struct {
	t     *tail
	lines int64
}

func newLineCounter(dir, glob string) *lineCounter { return &lineCounter{t: newTail(dir, glob)} }

// count returns the number of complete lines so far.
func (c *lineCounter) count() (int64, error) {
	err := c.t.poll(func(_ string, line []byte) error {
		if len(bytes.TrimSpace(line)) > 0 {
			c.lines++
		}
		return nil
	})
	return c.lines, err
}

// ackTracker follows the spouts' acked logs and tells whether every id a
// spout task emitted up to a cursor is acked.
type ackTracker struct {
	t      *tail
	spouts int
	acked  bitset
	// low[i] is the lowest id owned by spout task i not acked yet.
	low []int64
}

func newAckTracker(dir string, spouts int) *ackTracker {
	a := &ackTracker{t: newTail(dir, ackcheck.AckedGlob), spouts: spouts, low: make([]int64, spouts)}
	for i := range a.low {
		a.low[i] = int64(i)
	}
	return a
}

// poll reads the new ack records.
func (a *ackTracker) poll() error {
	err := a.t.poll(func(_ string, line []byte) error {
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			return nil
		}
		id, err := strconv.ParseInt(string(line), 10, 64)
		if err != nil || id < 0 {
			return fmt.Errorf("not an acked id: %q", line)
		}
		a.acked.set(id)
		return nil
	})
	for i := range a.low {
		for a.acked.has(a.low[i]) {
			a.low[i] += int64(a.spouts)
		}
	}
	return err
}

// covers reports whether every id owned by spout task i up to cursors[i]
// is acked, for every task.
func (a *ackTracker) covers(cursors []int64) bool {
	for i, c := range cursors {
		if i < len(a.low) && a.low[i] <= c {
			return false
		}
	}
	return true
}

// cursors reads the spout tasks' cursors: the highest id each emitted.
func cursors(dir string, spouts int) ([]int64, error) {
	out := make([]int64, spouts)
	for i := range out {
		c, err := ackcheck.ReadCursor(filepath.Join(dir, ackcheck.Cursor(i)))
		if err != nil {
			return nil, err
		}
		out[i] = c
	}
	return out, nil
}

// bitset is a growable set of non-negative ids.
type bitset []uint64

func (b *bitset) set(id int64) {
	w := int(id >> 6)
	if w >= len(*b) {
		*b = append(*b, make([]uint64, w+1-len(*b)+len(*b)/2)...)
	}
	(*b)[w] |= 1 << (id & 63)
}

func (b bitset) has(id int64) bool {
	w := int(id >> 6)
	return id >= 0 && w < len(b) && b[w]&(1<<(id&63)) != 0
}
