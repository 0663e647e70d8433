package multilang

import (
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestParse(t *testing.T) {
	cases := []struct {
		in   string
		want any
	}{
		{`null`, nil},
		{` true `, true},
		{`false`, false},
		{`0`, int64(0)},
		{`-12`, int64(-12)},
		{`9007199254740993`, int64(9007199254740993)}, // 2^53+1: exact
		{`9223372036854775807`, int64(math.MaxInt64)},
		{`18446744073709551615`, uint64(math.MaxUint64)},
		{`-9223372036854775808`, int64(math.MinInt64)},
		{`1.5`, 1.5},
		{`2.0`, 2.0},
		{`1e3`, 1000.0},
		{`-2.5E-3`, -0.0025},
		{`NaN`, math.NaN()},
		{`Infinity`, math.Inf(1)},
		{`-Infinity`, math.Inf(-1)},
		{`"a\"b\\c\/\n\t\u00e9\ud83d\ude00"`, "a\"b\\c/\n\té😀"},
		{`"\ud800x"`, "\ufffdx"}, // a lone surrogate
		{`[]`, []any{}},
		{`[1, "x", [null]]`, []any{int64(1), "x", []any{nil}}},
		{`{}`, map[string]any{}},
		{`{"a": {"b": [true]}, "c": 1}`, map[string]any{"a": map[string]any{"b": []any{true}}, "c": int64(1)}},
	}
	for _, c := range cases {
		got, err := Parse([]byte(c.in))
		if err != nil {
			t.Errorf("Parse(%s): %v", c.in, err)
			continue
		}
		if !equal(got, c.want) {
			t.Errorf("Parse(%s) = %#v, want %#v", c.in, got, c.want)
		}
	}
}

func TestParseErrors(t *testing.T) {
	cases := map[string]string{
		``:                       "unexpected end",
		`{`:                      "object key",
		`{"a" 1}`:                "want ':'",
		`[1 2]`:                  "want ',' or ']'",
		`"abc`:                   "unterminated string",
		"\"a\x01\"":              "control character",
		`"\x"`:                   "bad escape",
		`"\u12"`:                 "bad \\u escape",
		`01`:                     "leading zero",
		`1.`:                     "digit after '.'",
		`1e`:                     "exponent",
		`-`:                      "want a digit",
		`1e999`:                  "out of the float64 range",
		`123456789012345678901`:  "does not fit in 64 bits",
		`tru`:                    "unexpected",
		`[1] x`:                  "after the value",
		strings.Repeat("[", 100): "nested deeper",
		"\"\xff\"":               "not valid UTF-8",
	}
	for in, want := range cases {
		_, err := Parse([]byte(in))
		if err == nil || !errors.Is(err, ErrSyntax) || !strings.Contains(err.Error(), want) {
			t.Errorf("Parse(%q) = %v, want an ErrSyntax containing %q", in, err, want)
		}
	}
}

type point struct {
	X, Y int
}

func TestAppendValue(t *testing.T) {
	ts := time.Date(2024, 5, 6, 7, 8, 9, 123456789, time.UTC)
	cases := []struct {
		in   any
		want string
	}{
		{nil, `null`},
		{true, `true`},
		{int8(-3), `-3`},
		{uint64(math.MaxUint64), `18446744073709551615`},
		{int64(1<<53 + 1), `9007199254740993`},
		{2.0, `2.0`},
		{float32(0.5), `0.5`},
		{1e21, `1e+21`},
		{math.NaN(), `NaN`},
		{math.Inf(-1), `-Infinity`},
		{"a\"\\\n\x01<é", `"a\"\\\n\u0001<é"`},
		{"bad\xffutf8", `"bad\ufffdutf8"`},
		{[]byte("hi!"), `"aGkh"`},
		{ts, `"2024-05-06T07:08:09.123456789Z"`},
		{1500 * time.Millisecond, `1500000000`},
		{[]any{int64(1), "x"}, `[1,"x"]`},
		{map[string]any{"b": int64(1), "a": []any{}}, `{"a":[],"b":1}`},
		{point{1, 2}, `{"X":1,"Y":2}`},
	}
	for _, c := range cases {
		got, err := AppendValue(nil, c.in)
		if err != nil || string(got) != c.want {
			t.Errorf("AppendValue(%#v) = %s, %v; want %s", c.in, got, err, c.want)
		}
	}
	if _, err := AppendValue(nil, make(chan int)); err == nil {
		t.Error("AppendValue(chan) succeeded; want an error")
	}
}

// TestRoundTrip: what Parse returns, AppendValue writes back to the same
// value (the mapping is stable both ways for the types Parse yields).
func TestRoundTrip(t *testing.T) {
	values := []any{
		nil, true, int64(math.MinInt64), uint64(math.MaxUint64), 0.1, 2.0, math.Inf(1), "tab\t😀",
		[]any{map[string]any{"k": []any{int64(1), 1.0}}},
	}
	for _, v := range values {
		b, err := AppendValue(nil, v)
		if err != nil {
			t.Fatal(err)
		}
		got, err := Parse(b)
		if err != nil || !equal(got, v) {
			t.Errorf("round trip of %#v via %s = %#v, %v", v, b, got, err)
		}
	}
}

// equal is reflect.DeepEqual with NaN equal to NaN.
func equal(a, b any) bool {
	fa, ok1 := a.(float64)
	fb, ok2 := b.(float64)
	if ok1 && ok2 && math.IsNaN(fa) && math.IsNaN(fb) {
		return true
	}
	switch x := a.(type) {
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !equal(x[i], y[i]) {
				return false
			}
		}
		return true
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k := range x {
			if !equal(x[k], y[k]) {
				return false
			}
		}
		return true
	}
	return reflect.DeepEqual(a, b)
}
