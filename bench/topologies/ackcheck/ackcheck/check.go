package ackcheck

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
)

// Result is what the state directory says about a run over N ids.
type Result struct {
	Messages int64
	Copies   int
	// Acked is the number of distinct ids in [0, N) acked at least once;
	// AckRecords counts every ack record (AckRecords-Acked ids were acked
	// again after a replay).
	Acked, AckRecords int64
	// Unacked are the first ids never acked (at most 20); UnackedCount
	// counts them all.
	Unacked      []int64
	UnackedCount int64
	// Recorded counts the sink's records; Reached the distinct (id, copy)
	// pairs among them; SinkDuplicates = Recorded - Reached.
	Recorded, Reached, SinkDuplicates int64
	// Missing are the first acked ids with a copy that never reached the
	// sink (at most 20); MissingCount counts the (id, copy) pairs of acked
	// ids that never reached it — a lost tuple of an acked tree.
	Missing      []int64
	MissingCount int64
	// Replays counts emits of an id emitted before (replays-*.log).
	Replays int64
	// OutOfRange counts records naming an id outside [0, N) or a copy
	// outside [0, Copies).
	OutOfRange int64
}

// Complete reports whether every id was acked and every copy of it
// reached the sink: nothing was lost.
func (r *Result) Complete() bool {
	return r.UnackedCount == 0 && r.MissingCount == 0 && r.OutOfRange == 0
}

// ExactlyOnce reports whether every id was acked once and every copy
// reached the sink once, with no replay.
func (r *Result) ExactlyOnce() bool {
	return r.Complete() && r.AckRecords == r.Messages && r.SinkDuplicates == 0 && r.Replays == 0
}

func (r *Result) String() string {
	return fmt.Sprintf("%d of %d ids acked (%d ack records, first unacked %v), %d of %d (id, copy) pairs reached the sink (%d records, %d duplicates, %d pairs of acked ids missing, first %v), %d replays, %d out of range",
		r.Acked, r.Messages, r.AckRecords, r.Unacked, r.Reached, r.Messages*int64(r.Copies), r.Recorded, r.SinkDuplicates, r.MissingCount, r.Missing, r.Replays, r.OutOfRange)
}

// Check reads the state directory of a run over n ids with copies copies
// per id. The topology may still be running: a last line without its
// newline is being written and is ignored.
func Check(dir string, n int64, copies int) (*Result, error) {
	r := &Result{Messages: n, Copies: copies}
	ackCount := make([]uint16, n)
	err := eachRecord(dir, AckedGlob, func(f [][]byte) error {
		id, err := parseID(f, 1)
		if err != nil {
			return err
		}
		r.AckRecords++
		if id < 0 || id >= n {
			r.OutOfRange++
			return nil
		}
		if ackCount[id] == 0 {
			r.Acked++
		}
		ackCount[id]++
		return nil
	})
	if err != nil {
		return nil, err
	}
	sink := make([]uint16, n*int64(copies))
	err = eachRecord(dir, SinkGlob, func(f [][]byte) error {
		if len(f) != 2 && len(f) != 4 { // 4: tagged (Tag)
			return fmt.Errorf("want \"<id> <copy>\", got %q", bytes.Join(f, []byte(" ")))
		}
		id, err1 := strconv.ParseInt(string(f[0]), 10, 64)
		c, err2 := strconv.ParseInt(string(f[1]), 10, 64)
		if err := errors.Join(err1, err2); err != nil {
			return err
		}
		r.Recorded++
		if id < 0 || id >= n || c < 0 || c >= int64(copies) {
			r.OutOfRange++
			return nil
		}
		k := id*int64(copies) + c
		if sink[k] == 0 {
			r.Reached++
		}
		sink[k]++
		return nil
	})
	if err != nil {
		return nil, err
	}
	r.SinkDuplicates = r.Recorded - r.Reached
	for id := int64(0); id < n; id++ {
		if ackCount[id] == 0 {
			r.UnackedCount++
			if len(r.Unacked) < 20 {
				r.Unacked = append(r.Unacked, id)
			}
			continue
		}
		missing := false
		for c := int64(0); c < int64(copies); c++ {
			if sink[id*int64(copies)+c] == 0 {
				r.MissingCount++
				missing = true
			}
		}
		if missing && len(r.Missing) < 20 {
			r.Missing = append(r.Missing, id)
		}
	}
	if r.Replays, err = CountReplays(dir); err != nil {
		return nil, err
	}
	return r, nil
}

// AckedIDs returns the set of ids acked at least once.
func AckedIDs(dir string) (map[int64]bool, error) {
	out := map[int64]bool{}
	err := eachRecord(dir, AckedGlob, func(f [][]byte) error {
		id, err := parseID(f, 1)
		if err == nil {
			out[id] = true
		}
		return err
	})
	return out, err
}

// SinkCounts returns, per id, how many records of each copy the sinks
// wrote (index: copy).
func SinkCounts(dir string, copies int) (map[int64][]int, error) {
	out := map[int64][]int{}
	err := eachRecord(dir, SinkGlob, func(f [][]byte) error {
		if len(f) != 2 && len(f) != 4 { // 4: tagged (Tag)
			return fmt.Errorf("want \"<id> <copy>\", got %q", bytes.Join(f, []byte(" ")))
		}
		id, err1 := strconv.ParseInt(string(f[0]), 10, 64)
		c, err2 := strconv.Atoi(string(f[1]))
		if err := errors.Join(err1, err2); err != nil {
			return err
		}
		if c < 0 || c >= copies {
			return fmt.Errorf("copy %d out of [0, %d)", c, copies)
		}
		if out[id] == nil {
			out[id] = make([]int, copies)
		}
		out[id][c]++
		return nil
	})
	return out, err
}

// CountAcked counts the ack records (cheap enough to poll while a run
// goes on).
func CountAcked(dir string) (int64, error) {
	return countLines(dir, AckedGlob)
}

// CountReplays counts the replay records.
func CountReplays(dir string) (int64, error) {
	return countLines(dir, ReplaysGlob)
}

func countLines(dir, pattern string) (int64, error) {
	var n int64
	err := eachRecord(dir, pattern, func([][]byte) error { n++; return nil })
	return n, err
}

func parseID(f [][]byte, want int) (int64, error) {
	if len(f) != want {
		return 0, fmt.Errorf("want one id, got %q", bytes.Join(f, []byte(" ")))
	}
	return strconv.ParseInt(string(f[0]), 10, 64)
}

// eachRecord calls fn with the fields of every complete, non-empty line
// of the files matching pattern in dir.
func eachRecord(dir, pattern string, fn func(fields [][]byte) error) error {
	files, err := filepath.Glob(filepath.Join(dir, pattern))
	if err != nil {
		return err
	}
	sort.Strings(files)
	for _, path := range files {
		if err := eachLine(path, fn); err != nil {
			return err
		}
	}
	return nil
}

func eachLine(path string, fn func(fields [][]byte) error) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	br := bufio.NewReaderSize(f, 64<<10)
	for n := 1; ; n++ {
		line, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			return fmt.Errorf("%s:%d: line too long", path, n)
		}
		if err == io.EOF {
			return nil // a last line without newline is being written
		}
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		fields := bytes.Fields(line)
		if len(fields) == 0 {
			continue
		}
		if err := fn(fields); err != nil {
			return fmt.Errorf("%s:%d: %w", path, n, err)
		}
	}
}

// readIDs reads a log of one id per line; a missing file is empty.
func readIDs(path string) ([]int64, error) {
	var ids []int64
	err := eachLine(path, func(f [][]byte) error {
		id, err := parseID(f, 1)
		if err != nil {
			return err
		}
		ids = append(ids, id)
		return nil
	})
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	return ids, err
}

// Tagged is one record of a sink built with a Tag.
type Tagged struct {
	Tag    string
	Millis int64 // when it was recorded (Unix milliseconds)
}

// TaggedRecords reads the tagged records of every sink task, by task id,
// in the order they were written (untagged records are skipped).
func TaggedRecords(dir string) (map[int][]Tagged, error) {
	files, err := filepath.Glob(filepath.Join(dir, SinkGlob))
	if err != nil {
		return nil, err
	}
	out := map[int][]Tagged{}
	for _, path := range files {
		var task int
		if _, err := fmt.Sscanf(filepath.Base(path), "sink-%d.log", &task); err != nil {
			return nil, fmt.Errorf("%s: not a sink log", path)
		}
		err := eachLine(path, func(f [][]byte) error {
			if len(f) != 4 {
				return nil
			}
			ms, err := strconv.ParseInt(string(f[3]), 10, 64)
			if err != nil {
				return err
			}
			out[task] = append(out[task], Tagged{Tag: string(f[2]), Millis: ms})
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}
