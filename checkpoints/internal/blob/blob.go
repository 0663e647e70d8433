// Package blob is the stored form of one task's checkpoint state, shared
// by the checkpoint storages: a 16-byte header (magic "EGC1", the state's
// length as a big-endian uint64, the CRC-32C of the state as a big-endian
// uint32) followed by the state. A truncated, extended or overwritten
// blob does not decode: Decode's error wraps spi.ErrCorrupt.
package blob

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"

	"github.com/egret-stream/egret/core/spi"
)

// HeaderSize is the size of the header before the state.
const HeaderSize = 16

// magic starts every blob; the digit is the format version.
const magic = "EGC1"

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Header returns the header of state.
func Header(state []byte) []byte {
	h := make([]byte, 0, HeaderSize)
	h = append(h, magic...)
	h = binary.BigEndian.AppendUint64(h, uint64(len(state)))
	return binary.BigEndian.AppendUint32(h, crc32.Checksum(state, castagnoli))
}

// Encode returns the header followed by state.
func Encode(state []byte) []byte {
	return append(Header(state), state...)
}

// Decode checks b and returns the state it holds (aliasing b).
func Decode(b []byte) ([]byte, error) {
	if len(b) < HeaderSize {
		return nil, fmt.Errorf("%w: %d bytes is shorter than the %d-byte checkpoint header", spi.ErrCorrupt, len(b), HeaderSize)
	}
	if string(b[:4]) != magic {
		return nil, fmt.Errorf("%w: not a checkpoint blob (magic %q, want %q)", spi.ErrCorrupt, b[:4], magic)
	}
	n := binary.BigEndian.Uint64(b[4:12])
	state := b[HeaderSize:]
	if n != uint64(len(state)) {
		return nil, fmt.Errorf("%w: header says %d bytes of state, %d stored (truncated or extended)", spi.ErrCorrupt, n, len(state))
	}
	if want, got := binary.BigEndian.Uint32(b[12:16]), crc32.Checksum(state, castagnoli); want != got {
		return nil, fmt.Errorf("%w: CRC-32C of the state is %08x, the header says %08x", spi.ErrCorrupt, got, want)
	}
	return state, nil
}
