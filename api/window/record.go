package window

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/egret-stream/egret/api"
)

// recordSerializer encodes a key's record compactly: the key and each
// accumulator with the state's default serializer for their types, the
// numbers as varints —
//
//	key_len:uvarint key n:varint timer:varint count:uvarint
//	(start:varint len:varint count since last_emit:varint fired:byte
//	 first−start last−start:varint acc_len:uvarint acc){count}
//
// about a third of the size of CBOR's field-named encoding of the
// structs.
type recordSerializer[K comparable, ACC any] struct {
	key api.Serializer[K]
	acc api.Serializer[ACC]
}

func newRecordSerializer[K comparable, ACC any]() recordSerializer[K, ACC] {
	return recordSerializer[K, ACC]{key: api.DefaultSerializer[K](), acc: api.DefaultSerializer[ACC]()}
}

// Append implements api.Serializer.
func (s recordSerializer[K, ACC]) Append(dst []byte, r keyRecord[K, ACC]) ([]byte, error) {
	var err error
	if dst, err = appendSized(dst, r.Key, s.key); err != nil {
		return dst, fmt.Errorf("window key: %w", err)
	}
	dst = binary.AppendVarint(dst, r.N)
	dst = binary.AppendVarint(dst, r.Timer)
	dst = binary.AppendUvarint(dst, uint64(len(r.Wins)))
	for i := range r.Wins {
		w := &r.Wins[i]
		for _, v := range []int64{w.Start, w.End - w.Start, w.Count, w.SinceEmit, w.LastEmit} {
			dst = binary.AppendVarint(dst, v)
		}
		fired := byte(0)
		if w.Fired {
			fired = 1
		}
		dst = append(dst, fired)
		dst = binary.AppendVarint(dst, w.First-w.Start) // small for time windows
		dst = binary.AppendVarint(dst, w.Last-w.Start)
		if dst, err = appendSized(dst, w.Acc, s.acc); err != nil {
			return dst, fmt.Errorf("window accumulator: %w", err)
		}
	}
	return dst, nil
}

func appendSized[T any](dst []byte, v T, s api.Serializer[T]) ([]byte, error) {
	enc, err := s.Append(nil, v)
	if err != nil {
		return dst, err
	}
	dst = binary.AppendUvarint(dst, uint64(len(enc)))
	return append(dst, enc...), nil
}

var errRecord = errors.New("window: damaged key record")

// Decode implements api.Serializer.
func (s recordSerializer[K, ACC]) Decode(b []byte) (keyRecord[K, ACC], error) {
	var r keyRecord[K, ACC]
	d := recordDecoder{b: b}
	kb := d.bytes()
	n, timer, count := d.varint(), d.varint(), d.uvarint()
	if d.err != nil || count > uint64(len(d.b)) {
		return r, errRecord
	}
	var err error
	if r.Key, err = s.key.Decode(kb); err != nil {
		return r, fmt.Errorf("window key: %w", err)
	}
	r.N, r.Timer, r.Wins = n, timer, make([]winRecord[ACC], count)
	for i := range r.Wins {
		w := &r.Wins[i]
		w.Start = d.varint()
		w.End = w.Start + d.varint()
		w.Count, w.SinceEmit, w.LastEmit = d.varint(), d.varint(), d.varint()
		w.Fired = d.byte() == 1
		w.First, w.Last = w.Start+d.varint(), w.Start+d.varint()
		ab := d.bytes()
		if d.err != nil {
			return r, errRecord
		}
		if w.Acc, err = s.acc.Decode(ab); err != nil {
			return r, fmt.Errorf("window accumulator: %w", err)
		}
	}
	if d.err != nil || len(d.b) != 0 {
		return r, errRecord
	}
	return r, nil
}

type recordDecoder struct {
	b   []byte
	err error
}

func (d *recordDecoder) varint() int64 {
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.err = errRecord
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *recordDecoder) uvarint() uint64 {
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.err = errRecord
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *recordDecoder) byte() byte {
	if len(d.b) == 0 {
		d.err = errRecord
		return 0
	}
	c := d.b[0]
	d.b = d.b[1:]
	return c
}

func (d *recordDecoder) bytes() []byte {
	n := d.uvarint()
	if d.err != nil || n > uint64(len(d.b)) {
		d.err = errRecord
		return nil
	}
	v := d.b[:n]
	d.b = d.b[n:]
	return v
}
