package state

import (
	"fmt"
	"io"
)

// Results are a run's figures, in the order of its cases.
type Results struct {
	Results []Result `json:"results"`
}

// WriteMarkdown writes the results as the S section of
// docs/benchmarks.md.
func (rs *Results) WriteMarkdown(w io.Writer) error {
	_, err := fmt.Fprintf(w, `In one process: a task's backend over every key group, its checkpoints uploaded through
daemons/ckptio to a checkpoint manager over localfs (bench/state). Values of %s random bytes;
the state compacted once after loading; "1%% changed" rewrites every hundredth key; the last sync
figure follows a memtable's worth of writes to random keys. Not measured here: 4 GiB states
(the disk and the time of a make bench on this machine), and S3 as a whole container's recovery
(the restore below is its state-dependent part; T5-EO is the container kill).

| backend | state | S1 keyed counts per CPU-s | S2 sync full / 1%% changed / after a memtable (ms) | S2 async full / 1%% changed (ms) | S2 bytes full → 1%% changed uploaded | S2 p99 update between / during an upload (µs) | S3 restore (ms) |
|---|---|---|---|---|---|---|---|
`, valueBytesOf(rs.Results))
	if err != nil {
		return err
	}
	for _, r := range rs.Results {
		if _, err := fmt.Fprintf(w, "| %s | %d MiB | %.0f | %.1f / %.1f / %.1f | %.0f / %.0f | %d MiB → %.2f MiB (%.1f%%) | %.0f / %.0f | %.0f |\n",
			r.Backend, r.Bytes>>20, r.UpdatesPerCPUSecond, r.FullSyncMs, r.IncrSyncMs, r.MemTableSyncMs, r.FullAsyncMs, r.IncrAsyncMs,
			r.FullBytes>>20, float64(r.IncrUploaded)/(1<<20), 100*r.IncrementalFraction(), r.P99BetweenUs, r.P99DuringUs, r.RestoreMs); err != nil {
			return err
		}
	}
	return nil
}

// IncrementalFraction is the share of the checkpoint after 1% of the
// keys changed that it uploaded.
func (r Result) IncrementalFraction() float64 {
	return float64(r.IncrUploaded) / float64(max(r.IncrFull, 1))
}

// MaxSyncMs is the longest synchronous part of the result's checkpoints.
func (r Result) MaxSyncMs() float64 { return max(r.FullSyncMs, r.IncrSyncMs, r.MemTableSyncMs) }

func valueBytesOf(rs []Result) string {
	if len(rs) == 0 {
		return "?"
	}
	return fmt.Sprint(rs[0].ValueBytes)
}
