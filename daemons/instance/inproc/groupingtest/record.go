package groupingtest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"github.com/egret-stream/egret/api"
)

// Kind says what a Record records.
type Kind string

// Record kinds.
const (
	// KindPrepared: a task started; Tasks holds ComponentTasks of its own
	// component as the task saw them.
	KindPrepared Kind = "prepared"
	// KindTuple: a bolt task executed a data tuple.
	KindTuple Kind = "tuple"
	// KindTick: a bolt task executed a tick tuple.
	KindTick Kind = "tick"
	// KindCustomCall: the custom grouping function was called in the
	// spout task's process; Tasks holds the task list it received.
	KindCustomCall Kind = "custom-call"
	// KindSpoutDone: the spout task emitted all N of its tuples.
	KindSpoutDone Kind = "spout-done"
)

// Record is one observation of a task. Tuples of every case have the
// values (key string, n int) or, on the direct stream, (key, n, to int).
type Record struct {
	Kind      Kind   `json:"kind"`
	Component string `json:"component"`
	Task      int    `json:"task"`
	// Source, SourceTask and Stream describe the executed tuple.
	Source     string `json:"source,omitempty"`
	SourceTask int    `json:"source_task,omitempty"`
	Stream     string `json:"stream,omitempty"`
	// Arity is the number of values of the tuple; Key, N and To are its
	// values as far as they have the expected types.
	Arity int    `json:"arity,omitempty"`
	Key   string `json:"key,omitempty"`
	N     int    `json:"n,omitempty"`
	To    int    `json:"to,omitempty"`
	// Values describes tuples that do not have the expected types.
	Values string `json:"values,omitempty"`
	// Tasks: see KindPrepared and KindCustomCall.
	Tasks []int `json:"tasks,omitempty"`
}

// tupleRecord describes the tuple t executed by task of bolt.
func tupleRecord(bolt string, task int, t api.Tuple) Record {
	r := Record{Kind: KindTuple, Component: bolt, Task: task, Source: t.SourceComponent(),
		SourceTask: t.SourceTask(), Stream: t.SourceStream(), Arity: t.Len()}
	if t.IsTick() {
		r.Kind = KindTick
	}
	vals := t.Values()
	ok := len(vals) <= 3
	if len(vals) > 0 {
		var isString bool
		r.Key, isString = vals[0].(string)
		ok = ok && isString
	}
	if len(vals) > 1 {
		var isInt bool
		r.N, isInt = asInt(vals[1])
		ok = ok && isInt
	}
	if len(vals) > 2 {
		var isInt bool
		r.To, isInt = asInt(vals[2])
		ok = ok && isInt
	}
	if !ok {
		r.Values = fmt.Sprintf("%#v", vals)
	}
	return r
}

func asInt(v any) (int, bool) {
	switch n := v.(type) {
	case int:
		return n, true
	case int64:
		return int(n), true
	case int32:
		return int(n), true
	case uint64:
		return int(n), true
	case uint32:
		return int(n), true
	}
	return 0, false
}

// Recorder gives every task the Sink it records to.
type Recorder interface {
	// Open returns the sink of the task described by ctx. It is called
	// from the task's Open or Prepare.
	Open(ctx api.Context) (Sink, error)
}

// Sink records the observations of one task. Record is called from the
// task's goroutine.
type Sink interface {
	Record(r Record) error
	Close() error
}

// Memory records every task of the process in memory.
type Memory struct {
	mu      sync.Mutex
	records []Record
	changed chan struct{}
}

// NewMemory returns an empty in-memory recorder.
func NewMemory() *Memory {
	return &Memory{changed: make(chan struct{}, 1)}
}

// Open implements Recorder.
func (m *Memory) Open(api.Context) (Sink, error) { return memorySink{m}, nil }

// Records returns what was recorded so far. The slice is shared: do not
// modify it.
func (m *Memory) Records() []Record {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.records[:len(m.records):len(m.records)]
}

// Changed receives a value after records were added (several additions
// may give one value).
func (m *Memory) Changed() <-chan struct{} { return m.changed }

type memorySink struct{ m *Memory }

func (s memorySink) Record(r Record) error {
	s.m.mu.Lock()
	s.m.records = append(s.m.records, r)
	s.m.mu.Unlock()
	select {
	case s.m.changed <- struct{}{}:
	default:
	}
	return nil
}

func (memorySink) Close() error { return nil }

// Files records each task to its own file <component>-<task>.jsonl, one
// JSON object per line, under the directory named by the topology setting
// KeyRecordDir; it suits runtimes where every task is a separate process.
// A restarted task appends to its file.
type Files struct{}

// Open implements Recorder.
func (Files) Open(ctx api.Context) (Sink, error) {
	dir := ctx.Config(KeyRecordDir)
	if dir == "" {
		return nil, fmt.Errorf("topology setting %s is not set: it names the directory tasks record to", KeyRecordDir)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("create the record directory: %w", err)
	}
	path := filepath.Join(dir, fmt.Sprintf("%s-%d.jsonl", ctx.ComponentName(), ctx.TaskID()))
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open the record file: %w", err)
	}
	return &fileSink{f: f}, nil
}

type fileSink struct {
	mu  sync.Mutex
	f   *os.File
	buf []byte
}

// Record writes one line with one write, so that a reader sees whole
// lines (and at worst a partial last line, which ReadDir skips).
func (s *fileSink) Record(r Record) error {
	line, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("encode record: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.buf = append(append(s.buf[:0], line...), '\n')
	if _, err := s.f.Write(s.buf); err != nil {
		return fmt.Errorf("write record: %w", err)
	}
	return nil
}

func (s *fileSink) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.f.Close()
}

// ReadDir reads the records of every *.jsonl file in dir, file by file in
// name order. A last line without its newline is still being written and
// is skipped; any other line that does not decode is an error.
func ReadDir(dir string) ([]Record, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "*.jsonl"))
	if err != nil {
		return nil, err
	}
	sort.Strings(paths)
	var out []Record
	var errs []error
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if i := bytes.LastIndexByte(data, '\n'); i < len(data)-1 {
			data = data[:i+1] // drop a partial last line
		}
		for n, line := range strings.Split(strings.TrimSuffix(string(data), "\n"), "\n") {
			if line == "" {
				continue
			}
			var r Record
			if err := json.Unmarshal([]byte(line), &r); err != nil {
				errs = append(errs, fmt.Errorf("%s line %d: %w", p, n+1, err))
				continue
			}
			out = append(out, r)
		}
	}
	return out, errors.Join(errs...)
}
