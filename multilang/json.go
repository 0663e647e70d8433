package multilang

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"
	"unicode/utf16"
	"unicode/utf8"
)

// maxDepth bounds the nesting of arrays and objects a message may have.
const maxDepth = 64

// ErrSyntax is wrapped by the errors of Parse.
var ErrSyntax = errors.New("invalid JSON")

// Parse parses one JSON value into Go values of the tuple codec: null →
// nil, true/false → bool, an integer literal → int64 (uint64 above
// MaxInt64; larger is an error), any other number → float64, a string →
// string, an array → []any, an object → map[string]any. Besides standard
// JSON it accepts the tokens NaN, Infinity and -Infinity, which Python's
// json module writes for those floats. Only whitespace may follow the
// value.
func Parse(data []byte) (any, error) {
	p := parser{data: data}
	p.space()
	v, err := p.value(0)
	if err != nil {
		return nil, err
	}
	p.space()
	if p.pos != len(p.data) {
		return nil, p.errorf("unexpected %s after the value", p.what())
	}
	return v, nil
}

type parser struct {
	data []byte
	pos  int
}

func (p *parser) errorf(format string, args ...any) error {
	return fmt.Errorf("%w at byte %d: %s", ErrSyntax, p.pos, fmt.Sprintf(format, args...))
}

// what describes the byte at pos for an error.
func (p *parser) what() string {
	if p.pos >= len(p.data) {
		return "end of message"
	}
	return strconv.QuoteRune(rune(p.data[p.pos]))
}

func (p *parser) space() {
	for p.pos < len(p.data) {
		switch p.data[p.pos] {
		case ' ', '\t', '\n', '\r':
			p.pos++
		default:
			return
		}
	}
}

func (p *parser) literal(word string, v any) (any, error) {
	if len(p.data)-p.pos >= len(word) && string(p.data[p.pos:p.pos+len(word)]) == word {
		p.pos += len(word)
		return v, nil
	}
	return nil, p.errorf("unexpected %s", p.what())
}

func (p *parser) value(depth int) (any, error) {
	if p.pos >= len(p.data) {
		return nil, p.errorf("unexpected end of message")
	}
	switch c := p.data[p.pos]; c {
	case '{':
		return p.object(depth + 1)
	case '[':
		return p.array(depth + 1)
	case '"':
		return p.string()
	case 't':
		return p.literal("true", true)
	case 'f':
		return p.literal("false", false)
	case 'n':
		return p.literal("null", nil)
	case 'N':
		return p.literal("NaN", math.NaN())
	case 'I':
		return p.literal("Infinity", math.Inf(1))
	default:
		if c == '-' || (c >= '0' && c <= '9') {
			return p.number()
		}
		return nil, p.errorf("unexpected %s", p.what())
	}
}

func (p *parser) object(depth int) (any, error) {
	if depth > maxDepth {
		return nil, p.errorf("nested deeper than %d levels", maxDepth)
	}
	p.pos++ // {
	m := map[string]any{}
	p.space()
	if p.pos < len(p.data) && p.data[p.pos] == '}' {
		p.pos++
		return m, nil
	}
	for {
		p.space()
		if p.pos >= len(p.data) || p.data[p.pos] != '"' {
			return nil, p.errorf("want an object key (a string), got %s", p.what())
		}
		k, err := p.string()
		if err != nil {
			return nil, err
		}
		p.space()
		if p.pos >= len(p.data) || p.data[p.pos] != ':' {
			return nil, p.errorf("want ':' after an object key, got %s", p.what())
		}
		p.pos++
		p.space()
		v, err := p.value(depth)
		if err != nil {
			return nil, err
		}
		m[k.(string)] = v
		p.space()
		if p.pos >= len(p.data) {
			return nil, p.errorf("unterminated object")
		}
		switch p.data[p.pos] {
		case ',':
			p.pos++
		case '}':
			p.pos++
			return m, nil
		default:
			return nil, p.errorf("want ',' or '}' in an object, got %s", p.what())
		}
	}
}

func (p *parser) array(depth int) (any, error) {
	if depth > maxDepth {
		return nil, p.errorf("nested deeper than %d levels", maxDepth)
	}
	p.pos++ // [
	a := []any{}
	p.space()
	if p.pos < len(p.data) && p.data[p.pos] == ']' {
		p.pos++
		return a, nil
	}
	for {
		p.space()
		v, err := p.value(depth)
		if err != nil {
			return nil, err
		}
		a = append(a, v)
		p.space()
		if p.pos >= len(p.data) {
			return nil, p.errorf("unterminated array")
		}
		switch p.data[p.pos] {
		case ',':
			p.pos++
		case ']':
			p.pos++
			return a, nil
		default:
			return nil, p.errorf("want ',' or ']' in an array, got %s", p.what())
		}
	}
}

func (p *parser) string() (any, error) {
	p.pos++ // "
	start := p.pos
	// Fast path: no escapes.
	for p.pos < len(p.data) {
		c := p.data[p.pos]
		if c == '"' {
			s := p.data[start:p.pos]
			p.pos++
			if !utf8.Valid(s) {
				return nil, fmt.Errorf("%w: string at byte %d is not valid UTF-8", ErrSyntax, start)
			}
			return string(s), nil
		}
		if c == '\\' || c < 0x20 {
			break
		}
		p.pos++
	}
	buf := append([]byte(nil), p.data[start:p.pos]...)
	for p.pos < len(p.data) {
		c := p.data[p.pos]
		switch {
		case c == '"':
			p.pos++
			if !utf8.Valid(buf) {
				return nil, fmt.Errorf("%w: string at byte %d is not valid UTF-8", ErrSyntax, start)
			}
			return string(buf), nil
		case c < 0x20:
			return nil, p.errorf("control character %#x in a string", c)
		case c != '\\':
			buf = append(buf, c)
			p.pos++
			continue
		}
		p.pos++ // backslash
		if p.pos >= len(p.data) {
			break
		}
		e := p.data[p.pos]
		p.pos++
		switch e {
		case '"', '\\', '/':
			buf = append(buf, e)
		case 'b':
			buf = append(buf, '\b')
		case 'f':
			buf = append(buf, '\f')
		case 'n':
			buf = append(buf, '\n')
		case 'r':
			buf = append(buf, '\r')
		case 't':
			buf = append(buf, '\t')
		case 'u':
			r, ok := p.hex4()
			if !ok {
				return nil, p.errorf("bad \\u escape")
			}
			if utf16.IsSurrogate(r) {
				// A pair of escapes; a lone surrogate becomes U+FFFD.
				if p.pos+1 < len(p.data) && p.data[p.pos] == '\\' && p.data[p.pos+1] == 'u' {
					save := p.pos
					p.pos += 2
					r2, ok := p.hex4()
					if ok {
						if dec := utf16.DecodeRune(r, r2); dec != utf8.RuneError {
							buf = utf8.AppendRune(buf, dec)
							continue
						}
					}
					p.pos = save
				}
				r = utf8.RuneError
			}
			buf = utf8.AppendRune(buf, r)
		default:
			return nil, p.errorf("bad escape \\%c", e)
		}
	}
	return nil, fmt.Errorf("%w: unterminated string starting at byte %d", ErrSyntax, start-1)
}

func (p *parser) hex4() (rune, bool) {
	if len(p.data)-p.pos < 4 {
		return 0, false
	}
	var r rune
	for _, c := range p.data[p.pos : p.pos+4] {
		r <<= 4
		switch {
		case c >= '0' && c <= '9':
			r |= rune(c - '0')
		case c >= 'a' && c <= 'f':
			r |= rune(c - 'a' + 10)
		case c >= 'A' && c <= 'F':
			r |= rune(c - 'A' + 10)
		default:
			return 0, false
		}
	}
	p.pos += 4
	return r, true
}

func (p *parser) number() (any, error) {
	start := p.pos
	if p.data[p.pos] == '-' {
		p.pos++
		if p.pos < len(p.data) && p.data[p.pos] == 'I' {
			return p.literal("Infinity", math.Inf(-1))
		}
	}
	digits := func() int {
		n := 0
		for p.pos < len(p.data) && p.data[p.pos] >= '0' && p.data[p.pos] <= '9' {
			p.pos++
			n++
		}
		return n
	}
	intStart := p.pos
	if digits() == 0 {
		return nil, p.errorf("want a digit, got %s", p.what())
	}
	if p.data[intStart] == '0' && p.pos-intStart > 1 {
		return nil, fmt.Errorf("%w at byte %d: number with a leading zero", ErrSyntax, start)
	}
	isFloat := false
	if p.pos < len(p.data) && p.data[p.pos] == '.' {
		p.pos++
		isFloat = true
		if digits() == 0 {
			return nil, p.errorf("want a digit after '.', got %s", p.what())
		}
	}
	if p.pos < len(p.data) && (p.data[p.pos] == 'e' || p.data[p.pos] == 'E') {
		p.pos++
		isFloat = true
		if p.pos < len(p.data) && (p.data[p.pos] == '+' || p.data[p.pos] == '-') {
			p.pos++
		}
		if digits() == 0 {
			return nil, p.errorf("want a digit in the exponent, got %s", p.what())
		}
	}
	lit := string(p.data[start:p.pos])
	if isFloat {
		f, err := strconv.ParseFloat(lit, 64)
		if err != nil {
			return nil, fmt.Errorf("%w at byte %d: number %s is out of the float64 range", ErrSyntax, start, lit)
		}
		return f, nil
	}
	if i, err := strconv.ParseInt(lit, 10, 64); err == nil {
		return i, nil
	}
	if u, err := strconv.ParseUint(lit, 10, 64); err == nil {
		return u, nil
	}
	return nil, fmt.Errorf("%w at byte %d: integer %s does not fit in 64 bits (send it as a string)", ErrSyntax, start, lit)
}

// AppendValue appends the JSON text of a tuple value to dst, with the
// mapping of docs/multilang.md: integers are written exactly (also beyond
// 2^53), floats always with a fraction or an exponent so that they read
// back as floats, NaN and ±Inf as Python's NaN, Infinity and -Infinity,
// []byte as a base64 (standard, padded) string, time.Time as an RFC 3339
// string with nanoseconds, time.Duration as integer nanoseconds, maps with
// their keys sorted. Invalid UTF-8 in a string becomes U+FFFD. Other types
// (user types) are written by encoding/json or refused with an error.
func AppendValue(dst []byte, v any) ([]byte, error) {
	return appendValue(dst, v, 0)
}

func appendValue(dst []byte, v any, depth int) ([]byte, error) {
	if depth > maxDepth {
		return dst, fmt.Errorf("value nested deeper than %d levels", maxDepth)
	}
	switch x := v.(type) {
	case nil:
		return append(dst, "null"...), nil
	case bool:
		return strconv.AppendBool(dst, x), nil
	case int:
		return strconv.AppendInt(dst, int64(x), 10), nil
	case int8:
		return strconv.AppendInt(dst, int64(x), 10), nil
	case int16:
		return strconv.AppendInt(dst, int64(x), 10), nil
	case int32:
		return strconv.AppendInt(dst, int64(x), 10), nil
	case int64:
		return strconv.AppendInt(dst, x, 10), nil
	case uint:
		return strconv.AppendUint(dst, uint64(x), 10), nil
	case uint8:
		return strconv.AppendUint(dst, uint64(x), 10), nil
	case uint16:
		return strconv.AppendUint(dst, uint64(x), 10), nil
	case uint32:
		return strconv.AppendUint(dst, uint64(x), 10), nil
	case uint64:
		return strconv.AppendUint(dst, x, 10), nil
	case float32:
		return appendFloat(dst, float64(x), 32), nil
	case float64:
		return appendFloat(dst, x, 64), nil
	case string:
		return AppendString(dst, x), nil
	case []byte:
		dst = append(dst, '"')
		dst = base64.StdEncoding.AppendEncode(dst, x)
		return append(dst, '"'), nil
	case time.Time:
		return AppendString(dst, x.Format(time.RFC3339Nano)), nil
	case time.Duration:
		return strconv.AppendInt(dst, int64(x), 10), nil
	case []any:
		dst = append(dst, '[')
		for i, e := range x {
			if i > 0 {
				dst = append(dst, ',')
			}
			var err error
			if dst, err = appendValue(dst, e, depth+1); err != nil {
				return dst, err
			}
		}
		return append(dst, ']'), nil
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		dst = append(dst, '{')
		for i, k := range keys {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = AppendString(dst, k)
			dst = append(dst, ':')
			var err error
			if dst, err = appendValue(dst, x[k], depth+1); err != nil {
				return dst, err
			}
		}
		return append(dst, '}'), nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return dst, fmt.Errorf("value of type %T has no JSON form: %w", v, err)
	}
	return append(dst, b...), nil
}

func appendFloat(dst []byte, f float64, bits int) []byte {
	switch {
	case math.IsNaN(f):
		return append(dst, "NaN"...)
	case math.IsInf(f, 1):
		return append(dst, "Infinity"...)
	case math.IsInf(f, -1):
		return append(dst, "-Infinity"...)
	}
	start := len(dst)
	dst = strconv.AppendFloat(dst, f, 'g', -1, bits)
	for _, c := range dst[start:] {
		if c == '.' || c == 'e' {
			return dst
		}
	}
	return append(dst, ".0"...)
}

const hexDigits = "0123456789abcdef"

// AppendString appends s as a JSON string; invalid UTF-8 becomes U+FFFD.
func AppendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}
