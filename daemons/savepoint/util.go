package savepoint

import (
	"bytes"
	"io"
)

func bytesReader(b []byte) io.Reader { return bytes.NewReader(b) }

// teeBytes returns a reader of r that keeps what it reads in *dst.
func teeBytes(r io.Reader, dst *[]byte) io.Reader { return io.TeeReader(r, (*appender)(dst)) }

type appender []byte

func (a *appender) Write(p []byte) (int, error) { *a = append(*a, p...); return len(p), nil }

// readAll reads r into b.
func readAll(r io.Reader, b []byte) ([]byte, error) {
	var buf bytes.Buffer
	buf.Write(b)
	if _, err := io.Copy(&buf, io.LimitReader(r, maxManifest+1)); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
