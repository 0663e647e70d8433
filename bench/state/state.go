package state

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"time"

	"go.uber.org/zap"

	"github.com/egret-stream/egret/checkpoints/localfs"
	"github.com/egret-stream/egret/core/keygroup"
	"github.com/egret-stream/egret/core/spi"
	"github.com/egret-stream/egret/core/statebackend"
	"github.com/egret-stream/egret/daemons/ckptio"
	"github.com/egret-stream/egret/daemons/ckptmgr"
	_ "github.com/egret-stream/egret/statebackends/heap" // a backend measured
	"github.com/egret-stream/egret/statebackends/pebble"
)

// Case is one state measured: a backend holding Bytes of values of
// ValueBytes each.
type Case struct {
	Backend    string `json:"backend"`
	Bytes      int64  `json:"bytes"`
	ValueBytes int    `json:"value_bytes"`
}

// Options configure a run.
type Options struct {
	// Dir is a scratch directory (the backends' and the storage's files).
	Dir   string
	Cases []Case
	// Updates is the number of keyed updates of S1 (default 200 000).
	Updates int
	Out     io.Writer
}

// Result is one case's figures.
type Result struct {
	Case
	Keys int `json:"keys"`
	// S1: keyed counts per CPU-second over the whole state.
	UpdatesPerCPUSecond float64 `json:"updates_per_cpu_second"`
	// S2: the first (full) checkpoint, then one after 1% of the keys
	// changed (after a memtable's worth of writes: its sync part is the
	// flush of a full memtable on pebble).
	FullSyncMs          float64 `json:"full_sync_ms"`
	MemTableSyncMs      float64 `json:"memtable_sync_ms"`
	FullAsyncMs         float64 `json:"full_async_ms"`
	FullBytes           int64   `json:"full_bytes"`
	IncrSyncMs          float64 `json:"incremental_sync_ms"`
	IncrAsyncMs         float64 `json:"incremental_async_ms"`
	IncrUploaded        int64   `json:"incremental_uploaded_bytes"`
	IncrFull            int64   `json:"incremental_full_bytes"`
	P99BetweenUs        float64 `json:"p99_update_between_us"`
	P99DuringUs         float64 `json:"p99_update_during_upload_us"`
	UpdatesDuringUpload int     `json:"updates_during_upload"`
	// S3: the restore of the last checkpoint into an empty backend.
	RestoreMs float64 `json:"restore_ms"`
}

// forkSamples are the forks timed per checkpoint.
const forkSamples = 5

// betweenUpdates are the keyed updates timed between checkpoints.
const betweenUpdates = 5000

// keyGroups is the max parallelism of the benchmark's one task (all
// groups).
const keyGroups = 128

// Run measures every case, one after the other.
func Run(ctx context.Context, o Options) ([]Result, error) {
	if o.Out == nil {
		o.Out = io.Discard
	}
	if o.Updates <= 0 {
		o.Updates = 200000
	}
	var out []Result
	for i, c := range o.Cases {
		dir := filepath.Join(o.Dir, fmt.Sprintf("case-%d", i))
		r, err := runCase(ctx, o, c, dir)
		_ = os.RemoveAll(dir)
		if err != nil {
			return out, fmt.Errorf("%s, %d MiB: %w", c.Backend, c.Bytes>>20, err)
		}
		fmt.Fprintf(o.Out, "S: %s %d MiB: %.0f updates/CPU-s; full checkpoint sync %.1f ms async %.0f ms %d MiB; incremental sync %.1f ms async %.0f ms %.2f%% uploaded; sync after a memtable of writes %.1f ms; p99 update %.0f µs between, %.0f µs during an upload; restore %.0f ms\n",
			c.Backend, c.Bytes>>20, r.UpdatesPerCPUSecond, r.FullSyncMs, r.FullAsyncMs, r.FullBytes>>20, r.IncrSyncMs, r.IncrAsyncMs,
			100*r.IncrementalFraction(), r.MemTableSyncMs, r.P99BetweenUs, r.P99DuringUs, r.RestoreMs)
		out = append(out, *r)
	}
	return out, nil
}

// bench is one case's backend, storage and uploader.
type bench struct {
	b      statebackend.Backend
	up     *ckptio.Uploader
	client *ckptio.Client
	name   string
	groups keygroup.Range
	keys   int
	rng    *rand.Rand
	val    []byte
	dst    []byte
	key    []byte
	id     int64
	last   *ckptio.Manifest
}

func runCase(ctx context.Context, o Options, c Case, dir string) (*Result, error) {
	if c.ValueBytes < 16 || c.Bytes < int64(c.ValueBytes) {
		return nil, fmt.Errorf("value bytes %d (≥ 16) and state bytes %d (≥ one value)", c.ValueBytes, c.Bytes)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	mgr, err := startManager(ctx, filepath.Join(dir, "storage"), filepath.Join(dir, "ckptmgr.sock"))
	if err != nil {
		return nil, err
	}
	defer mgr.stop()
	client, err := ckptio.NewClient(mgr.socket, ckptio.Options{})
	if err != nil {
		return nil, err
	}
	defer client.Close()
	all := keygroup.Range{Start: 0, End: keyGroups}
	b, err := statebackend.Open(c.Backend, statebackend.Options{Dir: filepath.Join(dir, "db"), MaxParallelism: keyGroups, Groups: all})
	if err != nil {
		return nil, err
	}
	defer b.Close()
	w := &bench{b: b, up: ckptio.NewUploader(client, 1), client: client, name: c.Backend, groups: all,
		keys: int(c.Bytes / int64(c.ValueBytes)), rng: rand.New(rand.NewPCG(1, 2)), val: make([]byte, c.ValueBytes)}
	r := &Result{Case: c, Keys: w.keys}
	for i := range w.keys { // the state, every key once
		if err := w.put(i, 0); err != nil {
			return nil, err
		}
	}
	// S1: keyed counts over the whole state.
	cpu0 := cpuTime()
	for range o.Updates {
		if _, err := w.count(w.rng.IntN(w.keys)); err != nil {
			return nil, err
		}
	}
	r.UpdatesPerCPUSecond = float64(o.Updates) / (cpuTime() - cpu0).Seconds()
	// A state loaded long ago sits in the LSM's bottom level: the
	// checkpoints after the first share its tables.
	if c, ok := b.(interface{ Compact() error }); ok {
		if err := c.Compact(); err != nil {
			return nil, err
		}
	}
	// Keyed updates between checkpoints, then during the first
	// checkpoint's upload (which holds everything), as many; they touch
	// the 1% of the keys that change (every hundredth).
	changed := func() int { return w.rng.IntN(max(w.keys/100, 1)) * 100 }
	between := make([]time.Duration, 0, betweenUpdates)
	for range betweenUpdates {
		d, err := w.count(changed())
		if err != nil {
			return nil, err
		}
		between = append(between, d)
	}
	var during []time.Duration
	st, sync, err := w.checkpoint(ctx, func(uploading func() bool) error {
		for len(during) < betweenUpdates && uploading() {
			d, err := w.count(changed())
			if err != nil {
				return err
			}
			during = append(during, d)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	r.FullSyncMs, r.FullAsyncMs, r.FullBytes = ms(sync), ms(st.Duration), st.Full
	r.UpdatesDuringUpload = len(during)
	r.P99DuringUs, r.P99BetweenUs = p99us(during), p99us(between)
	// The next checkpoint, after 1% of the keys changed.
	for i := 0; i < w.keys; i += 100 {
		if err := w.put(i, 1); err != nil {
			return nil, err
		}
	}
	st, sync, err = w.checkpoint(ctx, nil)
	if err != nil {
		return nil, err
	}
	r.IncrSyncMs, r.IncrAsyncMs, r.IncrUploaded, r.IncrFull = ms(sync), ms(st.Duration), st.Uploaded, st.Full
	// A checkpoint after a memtable's worth of writes to random keys,
	// its sync part timed; it is then
	// restored into an empty backend (S3) and compared with the state.
	for range pebble.MemTableBytes / c.ValueBytes {
		if err := w.put(w.rng.IntN(w.keys), 2); err != nil {
			return nil, err
		}
	}
	if _, sync, err = w.checkpoint(ctx, nil); err != nil {
		return nil, err
	}
	r.MemTableSyncMs = ms(sync)
	man := w.last
	nb, err := statebackend.Open(c.Backend, statebackend.Options{Dir: filepath.Join(dir, "restored"), MaxParallelism: keyGroups, Groups: all})
	if err != nil {
		return nil, err
	}
	defer nb.Close()
	start := time.Now()
	if _, err := ckptio.NewUploader(client, 1).Restore(ctx, []*ckptio.Manifest{man}, ckptio.RestoreTarget{Backend: nb, Groups: all, Dir: dir}); err != nil {
		return nil, err
	}
	r.RestoreMs = ms(time.Since(start))
	if err := sameValue(b, nb, w.keys); err != nil {
		return nil, err
	}
	return r, nil
}

func ms(d time.Duration) float64 { return float64(d) / 1e6 }

func (w *bench) k(i int) statebackend.Key {
	w.key = binary.BigEndian.AppendUint64(w.key[:0], uint64(i))
	return statebackend.Key{Group: keygroup.Of(uint64(i)*0x9E3779B97F4A7C15, keyGroups), State: "count", Key: w.key}
}

// put writes key i's value: a count and random bytes.
func (w *bench) put(i int, n uint64) error {
	binary.BigEndian.PutUint64(w.val, n)
	for j := 8; j+8 <= len(w.val); j += 8 {
		binary.LittleEndian.PutUint64(w.val[j:], w.rng.Uint64())
	}
	return w.b.Put(w.k(i), w.val, 0)
}

// count adds one to key i's count, as a keyed count bolt does, and
// returns how long it took.
func (w *bench) count(i int) (time.Duration, error) {
	start := time.Now()
	v, ok, err := w.b.Get(w.k(i), w.dst[:0])
	if err != nil {
		return 0, err
	}
	if !ok || len(v) != len(w.val) {
		return 0, fmt.Errorf("key %d: %d bytes (found %v), want %d", i, len(v), ok, len(w.val))
	}
	w.dst = v
	copy(w.val, v)
	binary.BigEndian.PutUint64(w.val, binary.BigEndian.Uint64(v)+1)
	if err := w.b.Put(w.k(i), w.val, 0); err != nil {
		return 0, err
	}
	return time.Since(start), nil
}

// checkpoint forks the backend (timed: the synchronous part) and uploads
// the fork, calling meanwhile(uploading) on this goroutine while the
// upload runs.
func (w *bench) checkpoint(ctx context.Context, meanwhile func(uploading func() bool) error) (ckptio.Stats, time.Duration, error) {
	w.id++
	snap := ckptio.TaskSnapshot{Checkpoint: w.id, Task: 1, MaxParallelism: keyGroups, Groups: w.groups, Backend: w.name}
	// The sync part is the median of forkSamples forks (the last one is
	// uploaded): on a shared machine one fork's wall time is mostly the
	// scheduler's.
	var syncs []time.Duration
	for i := range forkSamples {
		if i > 0 {
			snap.Release()
		}
		start := time.Now()
		if inc, ok := w.b.(statebackend.Incremental); ok {
			fc, err := inc.Checkpoint()
			if err != nil {
				return ckptio.Stats{}, 0, err
			}
			snap.Files, snap.Incarnation = fc, inc.Incarnation()
		} else {
			s, err := w.b.Snapshot()
			if err != nil {
				return ckptio.Stats{}, 0, err
			}
			snap.Keyed = s
		}
		syncs = append(syncs, time.Since(start))
	}
	slices.Sort(syncs)
	sync := syncs[len(syncs)/2]
	type done struct {
		m   *ckptio.Manifest
		st  ckptio.Stats
		err error
	}
	ch := make(chan done, 1)
	go func() {
		m, st, err := w.up.Upload(ctx, snap)
		ch <- done{m, st, err}
	}()
	var d done
	got := false
	uploading := func() bool {
		if got {
			return false
		}
		select {
		case d = <-ch:
			got = true
			return false
		default:
			return true
		}
	}
	var merr error
	if meanwhile != nil {
		merr = meanwhile(uploading)
	}
	if !got {
		d = <-ch
	}
	if d.err != nil {
		return d.st, sync, d.err
	}
	w.last = d.m
	return d.st, sync, merr
}

// manager is a checkpoint manager over a localfs storage, in process.
type manager struct {
	socket string
	st     spi.CheckpointStorage
	cancel context.CancelFunc
	done   chan error
}

func startManager(ctx context.Context, root, socket string) (*manager, error) {
	st, err := localfs.New(spi.Config{localfs.KeyRoot: root}, nil)
	if err != nil {
		return nil, err
	}
	ready := make(chan struct{})
	srv, err := ckptmgr.New(ckptmgr.Config{TopologyName: "state-bench", Socket: socket, Storage: st, Ready: func() { close(ready) }}, zap.NewNop())
	if err != nil {
		st.Close()
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	m := &manager{socket: socket, st: st, cancel: cancel, done: make(chan error, 1)}
	go func() { m.done <- srv.Run(ctx) }()
	select {
	case <-ready:
		return m, nil
	case err := <-m.done:
		cancel()
		st.Close()
		return nil, fmt.Errorf("checkpoint manager: %w", err)
	}
}

func (m *manager) stop() {
	m.cancel()
	<-m.done
	m.st.Close()
}

// cpuTime is the user and system time of the process.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// p99us is the 99th percentile of ds in microseconds (0 for none).
func p99us(ds []time.Duration) float64 {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return float64(s[min(len(s)*99/100, len(s)-1)]) / 1e3
}

// sameValue checks n keys of a restored backend against the original.
func sameValue(a, b statebackend.Backend, n int) error {
	w := &bench{}
	for i := range n {
		k := w.k(i)
		va, oka, erra := a.Get(k, nil)
		vb, okb, errb := b.Get(k, nil)
		if err := errors.Join(erra, errb); err != nil {
			return err
		}
		if oka != okb || string(va) != string(vb) {
			return fmt.Errorf("key %d restored as %d bytes (found %v), was %d bytes (found %v)", i, len(vb), okb, len(va), oka)
		}
	}
	return nil
}
