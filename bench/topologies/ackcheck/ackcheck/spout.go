package ackcheck

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/egret-stream/egret/api"
)

// ackFlushEvery bounds how long acked ids wait in memory before they are
// appended to the acked log (an id acked but not yet written is emitted
// again by a restarted spout: a duplicate, never a loss).
const (
	ackFlushEvery = 2 * time.Millisecond
	ackFlushBytes = 4096
)

// SourceSpout emits the ids it owns that are not acked yet; see the
// package comment.
type SourceSpout struct {
	api.BaseSpout
	out api.SpoutCollector
	// n is the number of ids (0: unbounded); the task owns the ids
	// index, index+par, ...
	n, index, par int64
	acked         bitset
	next          int64   // next owned fresh id to consider
	cursor        int64   // highest id emitted by any process of this task
	retry         []int64 // failed ids, emitted before fresh ones
	ackLog        *os.File
	replayLog     *os.File
	cursorFile    *os.File
	buf           []byte
	lastFlush     time.Time
	// paused: deactivated, so NextTuple no longer flushes; every ack is
	// written at once.
	paused bool
	cur    []byte
	// Token bucket of the rate limit (rate 0: none).
	rate, tokens, burst float64
	last                time.Time

	emitted, replayed, ackedN, failed *api.Counter
	report                            func(error)
	writeErr                          bool
}

// Open implements api.Spout: it reads the task's acked log and cursor.
func (s *SourceSpout) Open(ctx api.Context, out api.SpoutCollector) error {
	s.out = out
	s.report = out.ReportError
	s.emitted = ctx.Counter(CounterEmitted)
	s.replayed = ctx.Counter(CounterReplayed)
	s.ackedN = ctx.Counter(CounterAcked)
	s.failed = ctx.Counter(CounterFailed)
	var err error
	if s.n, err = strconv.ParseInt(ctx.Config(KeyMessages), 10, 64); err != nil || s.n < 0 {
		return fmt.Errorf("%s: %q is not a number of messages", KeyMessages, ctx.Config(KeyMessages))
	}
	rate, err := strconv.Atoi(ctx.Config(KeyRate))
	if err != nil || rate < 0 {
		return fmt.Errorf("%s: %q is not a rate", KeyRate, ctx.Config(KeyRate))
	}
	dir := ctx.Config(KeyStateDir)
	if dir == "" {
		return fmt.Errorf("%s is not set: build the topology with a state directory (--state DIR)", KeyStateDir)
	}
	s.index = int64(ctx.TaskIndex())
	s.par = int64(len(ctx.ComponentTasks(ctx.ComponentName())))
	if s.par < 1 {
		return fmt.Errorf("component %s has no tasks", ctx.ComponentName())
	}
	if rate > 0 {
		s.rate = float64(rate) / float64(s.par)
		s.burst = math.Max(2, s.rate/50) // 20ms worth
	}

	ackPath := filepath.Join(dir, AckedLog(int(s.index)))
	ids, err := readIDs(ackPath)
	if err != nil {
		return err
	}
	for _, id := range ids {
		s.acked.set(id)
	}
	if s.ackLog, err = openLog(ackPath); err != nil {
		return err
	}
	if s.replayLog, err = openLog(filepath.Join(dir, ReplaysLog(int(s.index)))); err != nil {
		return err
	}
	if s.cursorFile, s.cursor, err = openCursor(filepath.Join(dir, Cursor(int(s.index)))); err != nil {
		return err
	}
	s.next = s.index
	s.lastFlush = time.Now()
	s.last = s.lastFlush
	ctx.Logger().Info("replayable source opened")
	return nil
}

// NextTuple implements api.Spout: it emits one id, a failed one first.
func (s *SourceSpout) NextTuple() {
	now := time.Now()
	if len(s.buf) > 0 && now.Sub(s.lastFlush) >= ackFlushEvery {
		s.flush(now)
	}
	if s.rate > 0 {
		s.tokens = math.Min(s.burst, s.tokens+now.Sub(s.last).Seconds()*s.rate)
		s.last = now
		if s.tokens < 1 {
			return
		}
	}
	id, replay, ok := s.pick()
	if !ok {
		return
	}
	if replay {
		s.replayed.Inc()
		s.write(s.replayLog, strconv.AppendInt(s.cur[:0], id, 10), '\n')
	} else {
		s.cursor = id
		s.cur = fmt.Appendf(s.cur[:0], "%020d\n", id)
		if _, err := s.cursorFile.WriteAt(s.cur, 0); err != nil {
			s.writeFailed(err)
		}
	}
	s.tokens--
	s.emitted.Inc()
	s.out.Emit(api.Values{id}, id)
}

// pick returns the next id to emit and whether it was emitted before.
func (s *SourceSpout) pick() (id int64, replay, ok bool) {
	for len(s.retry) > 0 {
		id = s.retry[0]
		s.retry = s.retry[1:]
		if !s.acked.has(id) {
			return id, true, true
		}
	}
	for s.n == 0 || s.next < s.n {
		id = s.next
		s.next += s.par
		if !s.acked.has(id) {
			return id, id <= s.cursor, true
		}
	}
	return 0, false, false
}

// Ack implements api.Spout: the id is appended to the acked log.
func (s *SourceSpout) Ack(msgID any) {
	id, ok := msgID.(int64)
	if !ok {
		return
	}
	s.ackedN.Inc()
	s.acked.set(id)
	s.buf = strconv.AppendInt(s.buf, id, 10)
	s.buf = append(s.buf, '\n')
	if now := time.Now(); s.paused || len(s.buf) >= ackFlushBytes || now.Sub(s.lastFlush) >= ackFlushEvery {
		s.flush(now)
	}
}

// Fail implements api.Spout: the id is emitted again.
func (s *SourceSpout) Fail(msgID any) {
	id, ok := msgID.(int64)
	if !ok {
		return
	}
	s.failed.Inc()
	s.retry = append(s.retry, id)
}

// Activate implements api.Spout.
func (s *SourceSpout) Activate() { s.paused = false }

// Deactivate implements api.Spout.
func (s *SourceSpout) Deactivate() {
	s.paused = true
	s.flush(time.Now())
}

// Close implements api.Spout.
func (s *SourceSpout) Close() {
	s.flush(time.Now())
	for _, f := range []*os.File{s.ackLog, s.replayLog, s.cursorFile} {
		if f != nil {
			_ = f.Close()
		}
	}
}

// DeclareOutputFields implements api.Spout.
func (s *SourceSpout) DeclareOutputFields(d api.OutputDeclarer) { d.Declare("id") }

func (s *SourceSpout) flush(now time.Time) {
	s.lastFlush = now
	if len(s.buf) == 0 || s.ackLog == nil {
		return
	}
	if _, err := s.ackLog.Write(s.buf); err != nil {
		s.writeFailed(err)
	}
	s.buf = s.buf[:0]
}

func (s *SourceSpout) write(f *os.File, b []byte, end byte) {
	if _, err := f.Write(append(b, end)); err != nil {
		s.writeFailed(err)
	}
}

func (s *SourceSpout) writeFailed(err error) {
	if !s.writeErr {
		s.writeErr = true
		s.report(fmt.Errorf("write the spout's state: %w", err))
	}
}

// openCursor opens the cursor file and returns the id it holds (-1 when
// empty).
func openCursor(path string) (*os.File, int64, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, 0, fmt.Errorf("open %s: %w", path, err)
	}
	return f, readCursor(f), nil
}

// bitset is a growable set of non-negative ids.
type bitset []uint64

func (b *bitset) set(id int64) {
	if id < 0 {
		return
	}
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
