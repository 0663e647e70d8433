package savepoint

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/cespare/xxhash/v2"

	"github.com/egret-stream/egret/api"
	"github.com/egret-stream/egret/core/keygroup"
	"github.com/egret-stream/egret/core/names"
	"github.com/egret-stream/egret/daemons/ckptio"
)

// ManifestFile is the name of the top-level manifest among a savepoint's
// files.
const ManifestFile = "SAVEPOINT"

// Version is the version of the format Write writes and Decode reads.
const Version = 1

// Manifest is a savepoint's top-level manifest.
type Manifest struct {
	Version int `json:"version"`
	// Topology and TopologyID name the submission it was taken from,
	// Checkpoint the complete checkpoint it copies.
	Topology   string    `json:"topology"`
	TopologyID string    `json:"topology_id"`
	Checkpoint int64     `json:"checkpoint"`
	Created    time.Time `json:"created"`
	// Backend is the state backend of the topology it was taken from
	// (informative: keyed state is saved as keyed streams).
	Backend    string      `json:"backend"`
	Components []Component `json:"components"`
}

// Component is the state of one component.
type Component struct {
	Name           string `json:"name"`
	Parallelism    int    `json:"parallelism"`
	MaxParallelism int    `json:"max_parallelism"`
	// States are the states its tasks declared (the union over its
	// tasks), by name.
	States []api.StateInfo `json:"states,omitempty"`
	// Tasks are its tasks in index order: Tasks[i] is the task of index i.
	Tasks []Task `json:"tasks"`
}

// Task is one task's state: its checkpoint manifest, whose files are files
// of the savepoint.
type Task struct {
	Task     int32            `json:"task"`
	Manifest *ckptio.Manifest `json:"manifest"`
}

// Size returns the bytes of every file of the savepoint.
func (m *Manifest) Size() int64 {
	var n int64
	for _, c := range m.Components {
		for _, t := range c.Tasks {
			n += t.Manifest.Size()
		}
	}
	return n
}

// Component returns the component named name, or nil.
func (m *Manifest) Component(name string) *Component {
	for i := range m.Components {
		if m.Components[i].Name == name {
			return &m.Components[i]
		}
	}
	return nil
}

// HasState tells whether the component saved any state.
func (c *Component) HasState() bool {
	if len(c.States) > 0 {
		return true
	}
	for _, t := range c.Tasks {
		if len(t.Manifest.Files) > 0 {
			return true
		}
	}
	return false
}

// magic starts an encoded manifest; the digit is the version.
const magic = "EGSP1\n"

// maxManifest bounds an encoded manifest a decoder reads.
const maxManifest = 64 << 20

// ErrCorrupt is wrapped by the errors of bytes that are not a savepoint
// manifest, or of a savepoint whose files do not match it.
var ErrCorrupt = errors.New("damaged or foreign savepoint")

// Encode returns the manifest's bytes:
//
//	"EGSP1\n" hex(xxh64(body)):16 "\n" body
//
// where body is the manifest as JSON (docs/savepoints.md).
func (m *Manifest) Encode() ([]byte, error) {
	if err := m.check(); err != nil {
		return nil, err
	}
	body, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	b.WriteString(magic)
	var sum [8]byte
	h := xxhash.Sum64(body)
	for i := range sum {
		sum[i] = byte(h >> (56 - 8*i))
	}
	b.WriteString(hex.EncodeToString(sum[:]))
	b.WriteByte('\n')
	b.Write(body)
	return b.Bytes(), nil
}

// Decode reads an encoded manifest; bytes that are not one (another file,
// a truncated or changed one, a manifest of a later version) give an error
// wrapping ErrCorrupt that says what is wrong.
func Decode(b []byte) (*Manifest, error) {
	m, err := decode(b)
	if err != nil {
		return nil, fmt.Errorf("savepoint manifest: %w: %w", ErrCorrupt, err)
	}
	return m, nil
}

func decode(b []byte) (*Manifest, error) {
	if len(b) > maxManifest {
		return nil, fmt.Errorf("%d bytes, above the limit of %d", len(b), maxManifest)
	}
	head := len(magic) + 17
	if len(b) < head || string(b[:len(magic)]) != magic {
		if len(b) >= 5 && string(b[:4]) == "EGSP" {
			return nil, fmt.Errorf("format version %q: this egret reads version %d", b[4], Version)
		}
		return nil, errors.New("not a savepoint manifest (bad magic or too short)")
	}
	sum, err := hex.DecodeString(string(b[len(magic) : head-1]))
	if err != nil || b[head-1] != '\n' {
		return nil, errors.New("bad checksum line")
	}
	body := b[head:]
	h := xxhash.Sum64(body)
	for i := range sum {
		if sum[i] != byte(h>>(56-8*i)) {
			return nil, errors.New("checksum mismatch (truncated or changed)")
		}
	}
	var m Manifest
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("body: %w", err)
	}
	if dec.More() {
		return nil, errors.New("data after the manifest")
	}
	if err := m.check(); err != nil {
		return nil, err
	}
	return &m, nil
}

// check refuses a manifest whose fields contradict each other.
func (m *Manifest) check() error {
	if m.Version != Version {
		return fmt.Errorf("version %d: this egret reads version %d", m.Version, Version)
	}
	if err := names.Check(names.Topology, m.Topology); err != nil {
		return err
	}
	if m.Checkpoint < 1 {
		return fmt.Errorf("checkpoint %d is not a checkpoint id", m.Checkpoint)
	}
	comps := map[string]bool{}
	files := map[string]bool{}
	tasks := map[int32]bool{}
	for _, c := range m.Components {
		if err := names.Check(names.Component, c.Name); err != nil {
			return err
		}
		if comps[c.Name] {
			return fmt.Errorf("component %q appears twice", c.Name)
		}
		comps[c.Name] = true
		if c.Parallelism < 1 || len(c.Tasks) != c.Parallelism {
			return fmt.Errorf("component %q: parallelism %d with %d tasks", c.Name, c.Parallelism, len(c.Tasks))
		}
		if err := keygroup.Check(c.Parallelism, c.MaxParallelism); err != nil {
			return fmt.Errorf("component %q: %w", c.Name, err)
		}
		states := map[string]bool{}
		for _, s := range c.States {
			if s.Name == "" || s.Descriptor == "" || states[s.Name] {
				return fmt.Errorf("component %q: state %q is unnamed, undescribed or listed twice", c.Name, s.Name)
			}
			states[s.Name] = true
		}
		for i, t := range c.Tasks {
			if err := checkTask(c, i, t, m.Checkpoint, tasks, files); err != nil {
				return err
			}
		}
	}
	return nil
}

func checkTask(c Component, index int, t Task, checkpoint int64, tasks map[int32]bool, files map[string]bool) error {
	tm := t.Manifest
	if tm == nil {
		return fmt.Errorf("component %q task %d: no manifest", c.Name, t.Task)
	}
	if tasks[t.Task] || tm.Task != t.Task || tm.Checkpoint != checkpoint {
		return fmt.Errorf("component %q task %d: duplicate task, or its manifest names task %d of checkpoint %d", c.Name, t.Task, tm.Task, tm.Checkpoint)
	}
	tasks[t.Task] = true
	if hasKeyed(tm) && (tm.MaxParallelism != c.MaxParallelism || tm.Groups != keygroup.RangeOf(index, c.Parallelism, c.MaxParallelism)) {
		return fmt.Errorf("component %q task %d: key groups %v of %d are not those of index %d of %d", c.Name, t.Task, tm.Groups, tm.MaxParallelism, index, c.Parallelism)
	}
	if _, err := tm.MarshalBinary(); err != nil {
		return fmt.Errorf("component %q task %d: %w", c.Name, t.Task, err)
	}
	for _, f := range tm.Files {
		if f.Part != ckptio.PartOperator && f.Part != ckptio.PartKeyedStream {
			return fmt.Errorf("component %q task %d: file %s holds part %q; a savepoint holds only %q and %q", c.Name, t.Task, f.Name, f.Part, ckptio.PartOperator, ckptio.PartKeyedStream)
		}
		if f.Name == ManifestFile || files[f.Name] {
			return fmt.Errorf("component %q task %d: file %s is named twice", c.Name, t.Task, f.Name)
		}
		files[f.Name] = true
	}
	return nil
}

func hasKeyed(m *ckptio.Manifest) bool {
	for _, f := range m.Files {
		if f.Part == ckptio.PartKeyedStream {
			return true
		}
	}
	return false
}
