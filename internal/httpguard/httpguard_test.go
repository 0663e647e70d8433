package httpguard

import "testing"

func TestLooksLikeHTTP(t *testing.T) {
	for in, want := range map[string]bool{
		"GET / HTTP/1.1\r\n":   true,
		"POST /kill HTTP/1.1":  true,
		"DELETE /x HTTP/1.1":   true,
		"\xff\xff\xff\xff xxx": false,
		"\x00\x00\x00\x05\x10": false,
		"get / HTTP/1.1":       false,
		"AB / x":               false,
		"ABCDEFGHIJKLMNOP":     false,
		"GE":                   true,
	} {
		if got := LooksLikeHTTP([]byte(in)); got != want {
			t.Errorf("LooksLikeHTTP(%q) = %v, want %v", in, got, want)
		}
	}
}
