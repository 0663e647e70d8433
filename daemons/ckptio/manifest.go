package ckptio

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/cespare/xxhash/v2"

	"github.com/egret-stream/egret/core/keygroup"
	"github.com/egret-stream/egret/core/spi"
)

// Manifest is a task's checkpoint: the files it consists of. It is what
// the task stores through StoreInstanceState (the checkpoint manager keeps
// it with spi.CheckpointStorage.Store), last, after every file it names
// is committed: a task's checkpoint exists iff its manifest is stored.
type Manifest struct {
	Checkpoint int64
	Task       int32
	// MaxParallelism and Groups are the task's key groups at the
	// checkpoint.
	MaxParallelism int
	Groups         keygroup.Range
	// Backend is the state backend that wrote the keyed parts.
	Backend string
	Files   []File
}

// File is one file of a checkpoint.
type File struct {
	// Name is the file's name in the checkpoint storage (its files area):
	// "<origin>-<task>-<rest>", origin being the checkpoint that uploaded
	// it (Origin).
	Name string
	// Part says what the file is to the task: PartOperator,
	// PartKeyedStream, or PartFilesPrefix followed by the file's name in
	// the backend's checkpoint directory.
	Part string
	Size int64
	// Sum is the XXH64 of the file's bytes.
	Sum uint64
	// Groups are the key groups whose entries the file holds (empty for
	// operator state).
	Groups keygroup.Range
}

// Parts of a checkpoint.
const (
	// PartOperator is the task's operator (non-keyed) state.
	PartOperator = "operator"
	// PartKeyedStream is a keyed snapshot stream (core/statebackend's
	// format), written by any backend.
	PartKeyedStream = "keyed"
	// PartFilesPrefix starts the part of a file of an incremental
	// checkpoint: "files/" + its name in the checkpoint directory.
	PartFilesPrefix = "files/"
)

// Origin returns the checkpoint that uploaded the file, as its name says.
func (f File) Origin() (int64, bool) { return Origin(f.Name) }

// Origin returns the checkpoint id that starts a file name
// ("<origin>-..."), or false for a name of another form.
func Origin(name string) (int64, bool) {
	head, _, ok := strings.Cut(name, "-")
	if !ok {
		return 0, false
	}
	id, err := strconv.ParseInt(head, 10, 64)
	if err != nil || id < 0 || strconv.FormatInt(id, 10) != head {
		return 0, false
	}
	return id, true
}

// ParseFileName returns the origin checkpoint and the task a file name
// of FileName's form starts with.
func ParseFileName(name string) (origin int64, task int32, ok bool) {
	origin, ok = Origin(name)
	if !ok {
		return 0, 0, false
	}
	_, rest, _ := strings.Cut(name, "-")
	head, _, found := strings.Cut(rest, "-")
	t, err := strconv.ParseInt(head, 10, 32)
	if !found || err != nil || t < 0 || strconv.FormatInt(t, 10) != head {
		return 0, 0, false
	}
	return origin, int32(t), true
}

// FileName returns the storage name of a file first uploaded by task in
// checkpoint origin; rest distinguishes it among the task's files of that
// checkpoint.
func FileName(origin int64, task int32, rest string) string {
	return strconv.FormatInt(origin, 10) + "-" + strconv.FormatInt(int64(task), 10) + "-" + rest
}

// Size returns the bytes of every file of the checkpoint (its full size).
func (m *Manifest) Size() int64 {
	var n int64
	for _, f := range m.Files {
		n += f.Size
	}
	return n
}

// Uploaded returns the bytes of the files this checkpoint uploaded (the
// others it shares with earlier ones).
func (m *Manifest) Uploaded() int64 {
	var n int64
	for _, f := range m.Files {
		if o, _ := f.Origin(); o == m.Checkpoint {
			n += f.Size
		}
	}
	return n
}

// manifestMagic starts an encoded manifest; the digit is the version.
const manifestMagic = "EGM1"

// Bounds of a manifest a decoder accepts.
const (
	maxManifestFiles = 1 << 20
	maxPart          = 1024
)

// ErrCorrupt is wrapped by the errors of bytes that are not a manifest or
// a message of the protocol.
var ErrCorrupt = errors.New("damaged checkpoint data")

// MarshalBinary encodes m:
//
//	"EGM1" checkpoint:uvarint task:uvarint maxParallelism:uvarint
//	groupsStart:uvarint groupsEnd:uvarint backend:string files:uvarint
//	file* xxh64(everything before):8
//	file = name:string part:string size:uvarint sum:8 groupsStart:uvarint groupsEnd:uvarint
//
// string = length:uvarint bytes; integers big-endian.
func (m *Manifest) MarshalBinary() ([]byte, error) {
	if err := m.check(); err != nil {
		return nil, err
	}
	b := []byte(manifestMagic)
	b = binary.AppendUvarint(b, uint64(m.Checkpoint))
	b = binary.AppendUvarint(b, uint64(m.Task))
	b = binary.AppendUvarint(b, uint64(m.MaxParallelism))
	b = binary.AppendUvarint(b, uint64(m.Groups.Start))
	b = binary.AppendUvarint(b, uint64(m.Groups.End))
	b = appendString(b, m.Backend)
	b = binary.AppendUvarint(b, uint64(len(m.Files)))
	for _, f := range m.Files {
		b = appendString(b, f.Name)
		b = appendString(b, f.Part)
		b = binary.AppendUvarint(b, uint64(f.Size))
		b = binary.BigEndian.AppendUint64(b, f.Sum)
		b = binary.AppendUvarint(b, uint64(f.Groups.Start))
		b = binary.AppendUvarint(b, uint64(f.Groups.End))
	}
	return binary.BigEndian.AppendUint64(b, xxhash.Sum64(b)), nil
}

// UnmarshalManifest decodes an encoded manifest; damaged bytes give an
// error wrapping ErrCorrupt.
func UnmarshalManifest(b []byte) (*Manifest, error) {
	m, err := unmarshalManifest(b)
	if err != nil {
		return nil, fmt.Errorf("checkpoint manifest: %w: %w", ErrCorrupt, err)
	}
	return m, nil
}

func unmarshalManifest(b []byte) (*Manifest, error) {
	if len(b) < len(manifestMagic)+8 || string(b[:len(manifestMagic)]) != manifestMagic {
		return nil, errors.New("not a manifest (bad magic or too short)")
	}
	body := b[:len(b)-8]
	if xxhash.Sum64(body) != binary.BigEndian.Uint64(b[len(b)-8:]) {
		return nil, errors.New("checksum mismatch")
	}
	d := decoder{b: body[len(manifestMagic):]}
	m := &Manifest{
		Checkpoint:     int64(d.uvarint(1 << 62)),
		Task:           int32(d.uvarint(1<<31 - 1)),
		MaxParallelism: int(d.uvarint(keygroup.Limit)),
	}
	m.Groups = keygroup.Range{Start: int(d.uvarint(keygroup.Limit)), End: int(d.uvarint(keygroup.Limit))}
	m.Backend = d.string(maxPart)
	n := d.uvarint(maxManifestFiles)
	if d.err == nil && n > uint64(len(d.b)) { // every file takes more than a byte
		d.fail("%d files in %d bytes", n, len(d.b))
	}
	if d.err == nil {
		m.Files = make([]File, 0, n)
	}
	for i := uint64(0); i < n && d.err == nil; i++ {
		f := File{Name: d.string(spi.MaxFileName), Part: d.string(maxPart), Size: int64(d.uvarint(1 << 62)), Sum: d.uint64()}
		f.Groups = keygroup.Range{Start: int(d.uvarint(keygroup.Limit)), End: int(d.uvarint(keygroup.Limit))}
		m.Files = append(m.Files, f)
	}
	if d.err != nil {
		return nil, d.err
	}
	if len(d.b) != 0 {
		return nil, fmt.Errorf("%d bytes after the last file", len(d.b))
	}
	if err := m.check(); err != nil {
		return nil, err
	}
	return m, nil
}

// check refuses a manifest whose fields contradict each other.
func (m *Manifest) check() error {
	if m.Checkpoint < 0 || m.Task < 0 {
		return fmt.Errorf("checkpoint %d task %d: ids are not negative", m.Checkpoint, m.Task)
	}
	if m.MaxParallelism < 0 || m.MaxParallelism > keygroup.Limit || !groupsIn(m.Groups, m.MaxParallelism) {
		return fmt.Errorf("key groups %v are not within the max parallelism %d", m.Groups, m.MaxParallelism)
	}
	seen := make(map[string]bool, len(m.Files))
	for _, f := range m.Files {
		if err := spi.CheckFileName(f.Name); err != nil {
			return err
		}
		if o, ok := f.Origin(); !ok || o > m.Checkpoint {
			return fmt.Errorf("file %s: its name does not start with a checkpoint id up to %d", f.Name, m.Checkpoint)
		}
		if seen[f.Part] {
			return fmt.Errorf("part %q appears twice", f.Part)
		}
		seen[f.Part] = true
		if f.Part != PartOperator && f.Part != PartKeyedStream {
			local, ok := strings.CutPrefix(f.Part, PartFilesPrefix)
			if !ok || spi.CheckFileName(local) != nil {
				return fmt.Errorf("file %s: part %q is not %q, %q or %q followed by a file name", f.Name, f.Part, PartOperator, PartKeyedStream, PartFilesPrefix)
			}
		}
		if f.Size < 0 || !groupsIn(f.Groups, m.MaxParallelism) {
			return fmt.Errorf("file %s: size %d or key groups %v out of range", f.Name, f.Size, f.Groups)
		}
	}
	return nil
}

func groupsIn(r keygroup.Range, maxParallelism int) bool {
	return r.Start >= 0 && r.Start <= r.End && r.End <= maxParallelism
}

func appendString(b []byte, s string) []byte {
	return append(binary.AppendUvarint(b, uint64(len(s))), s...)
}

// decoder reads the fields of a manifest or a message; the first error
// sticks and later reads return zero values.
type decoder struct {
	b   []byte
	err error
}

func (d *decoder) fail(format string, args ...any) {
	if d.err == nil {
		d.err = fmt.Errorf(format, args...)
	}
}

func (d *decoder) uvarint(max uint64) uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b)
	if n <= 0 || n > 1 && d.b[n-1] == 0 {
		d.fail("truncated, overlong or not minimal varint")
		return 0
	}
	if v > max {
		d.fail("value %d above %d", v, max)
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) uint64() uint64 {
	if d.err != nil {
		return 0
	}
	if len(d.b) < 8 {
		d.fail("truncated")
		return 0
	}
	v := binary.BigEndian.Uint64(d.b)
	d.b = d.b[8:]
	return v
}

func (d *decoder) bytes(max int) []byte {
	n := d.uvarint(uint64(max))
	if d.err != nil {
		return nil
	}
	if n > uint64(len(d.b)) {
		d.fail("a %d-byte field in %d bytes", n, len(d.b))
		return nil
	}
	v := d.b[:n]
	d.b = d.b[n:]
	return v
}

func (d *decoder) string(max int) string { return string(d.bytes(max)) }
