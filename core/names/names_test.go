package names

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"
)

// hostile are values no kind of name admits: path tricks, encodings of
// them, control characters, whitespace, Unicode look-alikes of '/' and '.',
// and over-long values.
var hostile = []string{
	"", ".", "..", "../x", "x/..", "a/b", "/abs", "a\\b", "%2e%2e", "%2F",
	"a\x00b", "\x00", "a\nb", " a", "a ", "a b", "\t",
	"a\uff0fb",                // fullwidth solidus
	"a\u2215b",                // division slash
	"\u2024\u2024",            // one dot leaders, looking like ".."
	"\uff0e\uff0e",            // fullwidth full stops
	"caf\u00e9", "\u0430dmin", // Cyrillic a
	strings.Repeat("a", MaxLength+1), strings.Repeat("a", 10000),
	"-a", "_a", ".a",
}

func TestCheckRejectsHostileNames(t *testing.T) {
	for _, k := range []Kind{Topology, Component, Stream, Cluster, Role, Environ, Container} {
		for _, s := range hostile {
			err := Check(k, s)
			if err == nil {
				t.Errorf("Check(%v, %q) = nil, want an error", k, s)
				continue
			}
			if !errors.Is(err, ErrInvalid) {
				t.Errorf("Check(%v, %q) = %v, does not match ErrInvalid", k, s, err)
			}
			msg := err.Error()
			if strings.ContainsAny(msg, "\n\x00") || !utf8.ValidString(msg) || len(msg) > 400 {
				t.Errorf("Check(%v, %q): message is not one short line: %q", k, s, msg)
			}
			if !strings.Contains(msg, k.String()) || !strings.Contains(msg, k.Rule()) {
				t.Errorf("Check(%v, %q) = %q: does not name the kind and its rule", k, s, msg)
			}
		}
	}
}

func TestCheckRules(t *testing.T) {
	tests := []struct {
		kinds []Kind
		ok    []string
		bad   []string
	}{
		{
			kinds: []Kind{Topology, Component, Stream},
			ok:    []string{"a", "A1", "word-count", "word_count", "x" + strings.Repeat("y", MaxLength-1)},
			bad:   []string{"1a", "a.b", "ü", "a\n", "x" + strings.Repeat("y", MaxLength)},
		},
		{
			kinds: []Kind{Cluster, Role, Environ},
			ok:    []string{"local", "www-data", "john.doe", "1st", "a_b", "a..b", "x" + strings.Repeat("y", MaxLength-1)},
			bad:   []string{".x", "-x", "a:b", "a@b", "x" + strings.Repeat("y", MaxLength)},
		},
	}
	for _, tc := range tests {
		for _, k := range tc.kinds {
			for _, s := range tc.ok {
				if err := Check(k, s); err != nil {
					t.Errorf("Check(%v, %q) = %v, want nil", k, s, err)
				}
			}
			for _, s := range tc.bad {
				if err := Check(k, s); err == nil {
					t.Errorf("Check(%v, %q) = nil, want an error", k, s)
				}
			}
		}
	}
}

func TestErrorMessages(t *testing.T) {
	for _, tc := range []struct {
		k    Kind
		s    string
		want string
	}{
		{Topology, "../x", `topology name "../x" is invalid: a topology name must start with a letter and contain only letters, digits, '-' and '_' (ASCII, at most 63 characters)`},
		{Role, "", `the role is empty: a role must start with a letter or digit and contain only letters, digits, '.', '-' and '_' (ASCII, at most 63 characters)`},
		{Topology, "a\x00b", `topology name "a\x00b" is invalid`},
		{Topology, "a\uff0fb", `topology name "a\uff0fb" is invalid`},
		{Topology, strings.Repeat("a", 1000), `topology name "` + strings.Repeat("a", 64) + `"... (1000 bytes) is invalid`},
	} {
		if got := Check(tc.k, tc.s).Error(); !strings.HasPrefix(got, tc.want) {
			t.Errorf("Check(%v, %q) = %q, want prefix %q", tc.k, tc.s, got, tc.want)
		}
	}
}

func TestParseContainer(t *testing.T) {
	for s, want := range map[string]int{"0": 0, "1": 1, "12": 12, "007": 7, "999999999": 999999999} {
		if n, err := ParseContainer(s); err != nil || n != want {
			t.Errorf("ParseContainer(%q) = %d, %v; want %d", s, n, err, want)
		}
	}
	for _, s := range []string{"", "-1", "+1", " 1", "1 ", "0x1", "1e3", "1.0", "1/2", "..", "\uff11", "1000000000", "a"} {
		if _, err := ParseContainer(s); !errors.Is(err, ErrInvalid) {
			t.Errorf("ParseContainer(%q) = %v, want an ErrInvalid error", s, err)
		}
	}
}

// FuzzCheck: whatever Check accepts, of any kind, is a single plain file
// name element made of printable ASCII, that no path cleaning changes.
func FuzzCheck(f *testing.F) {
	for _, s := range append(hostile, "wordcount", "john.doe", "a-b_c") {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, k := range []Kind{Topology, Component, Stream, Cluster, Role, Environ, Container} {
			err := Check(k, s)
			if err != nil {
				if !errors.Is(err, ErrInvalid) || strings.ContainsAny(err.Error(), "\n\x00") {
					t.Fatalf("Check(%v, %q): bad error %q", k, s, err)
				}
				continue
			}
			if s == "." || s == ".." || len(s) > MaxLength || filepath.Base(s) != s || filepath.Clean(s) != s || !filepath.IsLocal(s) {
				t.Fatalf("Check(%v, %q) accepted a value that is not one plain path element", k, s)
			}
			for i := 0; i < len(s); i++ {
				if s[i] <= ' ' || s[i] >= 0x7f || s[i] == '/' || s[i] == '\\' || s[i] == '%' {
					t.Fatalf("Check(%v, %q) accepted byte %q", k, s, s[i])
				}
			}
		}
	})
}

func TestNearest(t *testing.T) {
	cands := []string{"wordcount", "exclamation", "windowed"}
	for _, tc := range []struct {
		s, want string
		ok      bool
	}{
		{"wordcuont", "wordcount", true}, {"wordcount", "wordcount", true}, {"exclamatoin", "exclamation", true},
		{"zzz", "", false}, {"kafka", "", false},
	} {
		got, ok := Nearest(tc.s, cands)
		if got != tc.want || ok != tc.ok {
			t.Errorf("Nearest(%q) = %q, %v; want %q, %v", tc.s, got, ok, tc.want, tc.ok)
		}
	}
	if _, ok := Nearest("x", nil); ok {
		t.Error("a nearest name among none")
	}
}
