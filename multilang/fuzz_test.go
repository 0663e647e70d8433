package multilang

import (
	"bytes"
	"errors"
	"io"
	"testing"
)

// FuzzParse: Parse never panics, and what it accepts, AppendValue writes
// back as JSON that parses to the same value.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		`{"command":"emit","tuple":["a",1,2.5,null,true,[{"x":"y"}]],"anchors":["3"],"need_task_ids":false}`,
		`{"pid": 1234}`, `[1,2,3]`, `"\ud83d\ude00"`, `NaN`, `-Infinity`, `18446744073709551615`, `1e-7`,
		`{"a":`, `"\u00`, "\"\xff\"",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		v, err := Parse(data)
		if err != nil {
			if !errors.Is(err, ErrSyntax) {
				t.Fatalf("Parse error %v does not wrap ErrSyntax", err)
			}
			return
		}
		b, err := AppendValue(nil, v)
		if err != nil {
			t.Fatalf("AppendValue of a parsed value: %v", err)
		}
		w, err := Parse(b)
		if err != nil || !equal(v, w) {
			t.Fatalf("%q parsed to %#v, written as %s, parsed back to %#v (%v)", data, v, b, w, err)
		}
		_, _ = Decode(data) // never panics
	})
}

// FuzzReader: the framing reader never panics and never returns an empty
// message or one above its limit.
func FuzzReader(f *testing.F) {
	f.Add([]byte("{\"command\":\"sync\"}\nend\n\n{\"a\":\n1}\nend\n"))
	f.Add([]byte("garbage\nend\nend\n"))
	f.Add([]byte("{}\r\nend\r\n{"))
	f.Fuzz(func(t *testing.T, data []byte) {
		const limit = 64
		rd := NewReader(bytes.NewReader(data), limit)
		for range 1000 {
			msg, err := rd.Next()
			if err != nil {
				if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, ErrTooLarge) || errors.Is(err, ErrProtocol) {
					if errors.Is(err, ErrTooLarge) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
						return
					}
					continue
				}
				t.Fatalf("unexpected error %v", err)
			}
			if len(msg) > limit+8 || len(msg) == 0 {
				t.Fatalf("message of %d bytes (limit %d)", len(msg), limit)
			}
		}
	})
}
