package statebackend

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/cespare/xxhash/v2"
)

// The snapshot stream every backend writes and reads (version 1):
//
//	stream = "EGKS" 0x01 record* end
//	record = len(key):uvarint key len(value):uvarint value   (stored forms, len(key) ≥ 3)
//	end    = 0x00 checksum
//
// with records in ascending key order (so in key-group order) and checksum
// the XXH64 (8 bytes, big endian) of every byte before end.
var snapshotMagic = []byte("EGKS\x01")

// maxRecordPart bounds one key or value of a stream read (1 GiB).
const maxRecordPart = 1 << 30

// SnapshotWriter writes a snapshot stream.
type SnapshotWriter struct {
	w   *bufio.Writer
	d   *xxhash.Digest
	n   int64
	tmp []byte
	err error
}

// NewSnapshotWriter starts a stream on w.
func NewSnapshotWriter(w io.Writer) *SnapshotWriter {
	s := &SnapshotWriter{w: bufio.NewWriterSize(w, 256<<10), d: xxhash.New()}
	s.write(snapshotMagic)
	return s
}

func (s *SnapshotWriter) write(p []byte) {
	if s.err != nil {
		return
	}
	_, _ = s.d.Write(p)
	var n int
	n, s.err = s.w.Write(p)
	s.n += int64(n)
}

// Add writes one entry (stored key and stored value).
func (s *SnapshotWriter) Add(key, val []byte) error {
	s.tmp = binary.AppendUvarint(s.tmp[:0], uint64(len(key)))
	s.write(s.tmp)
	s.write(key)
	s.tmp = binary.AppendUvarint(s.tmp[:0], uint64(len(val)))
	s.write(s.tmp)
	s.write(val)
	return s.err
}

// Finish writes the end of the stream and flushes it; it returns the
// stream's length.
func (s *SnapshotWriter) Finish() (int64, error) {
	sum := s.d.Sum64()
	s.write([]byte{0})
	if s.err == nil {
		var b [8]byte
		binary.BigEndian.PutUint64(b[:], sum)
		var n int
		n, s.err = s.w.Write(b[:])
		s.n += int64(n)
	}
	if s.err == nil {
		s.err = s.w.Flush()
	}
	if s.err != nil {
		return s.n, fmt.Errorf("write state snapshot: %w", s.err)
	}
	return s.n, nil
}

// ReadSnapshot reads a stream from r and calls f with every entry's
// stored key and value, in stream order; the slices are reused after f
// returns. A damaged stream (bad magic, truncation, bad lengths, keys out
// of order, checksum mismatch) is an error wrapping ErrCorrupt, found
// possibly after f saw entries of it.
func ReadSnapshot(r io.Reader, f func(key, val []byte) error) error {
	br := bufio.NewReaderSize(r, 256<<10)
	d := xxhash.New()
	magic := make([]byte, len(snapshotMagic))
	if _, err := io.ReadFull(br, magic); err != nil || string(magic) != string(snapshotMagic) {
		return fmt.Errorf("%w: not a keyed-state snapshot (bad magic)", ErrCorrupt)
	}
	_, _ = d.Write(magic)
	var key, prev, val, lenBuf []byte
	readLen := func(what string) (int, error) {
		n, err := binary.ReadUvarint(br)
		if err != nil {
			return 0, fmt.Errorf("%w: truncated %s length: %v", ErrCorrupt, what, err)
		}
		if n > maxRecordPart {
			return 0, fmt.Errorf("%w: %s of %d bytes", ErrCorrupt, what, n)
		}
		lenBuf = binary.AppendUvarint(lenBuf[:0], n)
		return int(n), nil
	}
	for {
		kn, err := readLen("key")
		if err != nil {
			return err
		}
		if kn == 0 {
			break
		}
		_, _ = d.Write(lenBuf)
		if kn < 3 {
			return fmt.Errorf("%w: key of %d bytes", ErrCorrupt, kn)
		}
		if key, err = readN(br, key, kn); err != nil {
			return err
		}
		_, _ = d.Write(key)
		if string(key) <= string(prev) && prev != nil {
			return fmt.Errorf("%w: keys out of order", ErrCorrupt)
		}
		vn, err := readLen("value")
		if err != nil {
			return err
		}
		_, _ = d.Write(lenBuf)
		if val, err = readN(br, val, vn); err != nil {
			return err
		}
		_, _ = d.Write(val)
		if _, _, _, ok := SplitKey(key); !ok {
			return fmt.Errorf("%w: malformed key", ErrCorrupt)
		}
		if _, _, ok := SplitValue(val); !ok {
			return fmt.Errorf("%w: value of %d bytes", ErrCorrupt, len(val))
		}
		if err := f(key, val); err != nil {
			return err
		}
		prev = append(prev[:0], key...)
	}
	sum := d.Sum64()
	var b [8]byte
	if _, err := io.ReadFull(br, b[:]); err != nil {
		return fmt.Errorf("%w: truncated checksum", ErrCorrupt)
	}
	if binary.BigEndian.Uint64(b[:]) != sum {
		return fmt.Errorf("%w: checksum mismatch", ErrCorrupt)
	}
	if _, err := br.ReadByte(); !errors.Is(err, io.EOF) {
		return fmt.Errorf("%w: bytes after the end", ErrCorrupt)
	}
	return nil
}

// readN reads n bytes into buf, growing it as bytes arrive (a damaged
// length does not allocate what the stream does not hold).
func readN(r io.Reader, buf []byte, n int) ([]byte, error) {
	buf = buf[:0]
	for len(buf) < n {
		chunk := min(n-len(buf), 1<<20)
		buf = slices.Grow(buf, chunk)
		m, err := io.ReadFull(r, buf[len(buf):len(buf)+chunk])
		buf = buf[:len(buf)+m]
		if err != nil {
			return buf, fmt.Errorf("%w: truncated record: %v", ErrCorrupt, err)
		}
	}
	return buf, nil
}
