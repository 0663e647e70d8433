package conf

import (
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/egret-stream/egret/core/names"
	"github.com/egret-stream/egret/core/spi"
)

// canonical checks v against k's type and returns its canonical form.
func canonical(k *Key, v string) (string, error) {
	s := strings.TrimSpace(v)
	var out string
	switch k.Type {
	case spi.KeyString:
		out = v
	case spi.KeyInt:
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return "", fmt.Errorf("%q is not an integer", v)
		}
		out = strconv.FormatInt(n, 10)
	case spi.KeyFloat:
		f, err := strconv.ParseFloat(s, 64)
		if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
			return "", fmt.Errorf("%q is not a number", v)
		}
		out = s
	case spi.KeyBool:
		b, ok := parseBool(s)
		if !ok {
			return "", fmt.Errorf("%q is not a boolean (use true or false)", v)
		}
		out = strconv.FormatBool(b)
	case spi.KeyDuration:
		d, err := time.ParseDuration(s)
		if err != nil {
			return "", fmt.Errorf("%q is not a duration (for example 500ms, 30s, 2m)", v)
		}
		if d < 0 {
			return "", fmt.Errorf("%q is negative", v)
		}
		out = s
	case spi.KeyBytes:
		n, err := ParseBytes(s)
		if err != nil {
			return "", fmt.Errorf("%q is not a size in bytes (for example 1048576, 64KiB, 100MiB, 2GiB)", v)
		}
		out = strconv.FormatInt(n, 10)
	case spi.KeyEnum:
		if !slices.Contains(k.Enum, s) {
			return "", fmt.Errorf("%q is not one of the allowed values: %s", v, strings.Join(k.Enum, ", "))
		}
		out = s
	case spi.KeyList:
		out = strings.Join(splitList(v), ",")
	default:
		return "", fmt.Errorf("unsupported type %v", k.Type)
	}
	if k.Check != nil {
		if err := k.Check(out); err != nil {
			return "", err
		}
	}
	return out, nil
}

func parseBool(s string) (bool, bool) {
	switch strings.ToLower(s) {
	case "true", "yes", "on", "1":
		return true, true
	case "false", "no", "off", "0":
		return false, true
	}
	return false, false
}

// splitList splits a comma-separated list, trimming items and dropping
// empty ones.
func splitList(v string) []string {
	var out []string
	for _, item := range strings.Split(v, ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	return out
}

var bytesRE = regexp.MustCompile(`^(\d+(?:\.\d+)?)\s*([A-Za-z]*)$`)

var byteUnits = map[string]float64{
	"": 1, "b": 1,
	"k": 1 << 10, "kb": 1e3, "kib": 1 << 10,
	"m": 1 << 20, "mb": 1e6, "mib": 1 << 20,
	"g": 1 << 30, "gb": 1e9, "gib": 1 << 30,
	"t": 1 << 40, "tb": 1e12, "tib": 1 << 40,
}

// ParseBytes parses a byte count: a plain integer, or a number with a unit
// B, KB/MB/GB/TB (powers of 1000), KiB/MiB/GiB/TiB or K/M/G/T (powers of
// 1024). Units are case-insensitive.
func ParseBytes(s string) (int64, error) {
	m := bytesRE.FindStringSubmatch(strings.TrimSpace(s))
	if m == nil {
		return 0, fmt.Errorf("%q is not a size in bytes", s)
	}
	unit, ok := byteUnits[strings.ToLower(m[2])]
	if !ok {
		return 0, fmt.Errorf("%q has an unknown size unit %q", s, m[2])
	}
	if !strings.Contains(m[1], ".") {
		n, err := strconv.ParseInt(m[1], 10, 64)
		if err == nil && n <= math.MaxInt64/int64(unit) {
			return n * int64(unit), nil
		}
	}
	f, err := strconv.ParseFloat(m[1], 64)
	if err != nil || f*unit >= math.MaxInt64 {
		return 0, fmt.Errorf("%q is too large", s)
	}
	return int64(math.Round(f * unit)), nil
}

// ---- checks run on canonical values ----

func checkPercent(v string) error {
	if f, ok := spi.Numeric(v); ok && (f < 0 || f > 100) {
		return fmt.Errorf("%q is not a percentage between 0 and 100", v)
	}
	return nil
}

var nameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]*$`)

func checkName(v string) error {
	if v != "" && !nameRE.MatchString(v) {
		return fmt.Errorf("%q is not a backend name (lower-case letters, digits, - and _)", v)
	}
	return nil
}

var knownGOOS = []string{"aix", "android", "darwin", "dragonfly", "freebsd", "illumos", "ios", "js", "linux", "netbsd", "openbsd", "plan9", "solaris", "wasip1", "windows"}
var knownGOARCH = []string{"386", "amd64", "arm", "arm64", "loong64", "mips", "mips64", "mips64le", "mipsle", "ppc64", "ppc64le", "riscv64", "s390x", "wasm"}

func checkGOOS(v string) error {
	if v != "" && !slices.Contains(knownGOOS, v) {
		return fmt.Errorf("%q is not a GOOS (for example linux, darwin, windows)%s", v, didYouMean(v, knownGOOS, 2))
	}
	return nil
}

func checkGOARCH(v string) error {
	if v != "" && !slices.Contains(knownGOARCH, v) {
		return fmt.Errorf("%q is not a GOARCH (for example amd64, arm64)%s", v, didYouMean(v, knownGOARCH, 2))
	}
	return nil
}

func checkSinks(v string) error {
	var seen []string
	for _, s := range splitList(v) {
		if slices.Contains(seen, s) {
			return fmt.Errorf("sink %q is listed twice", s)
		}
		seen = append(seen, s)
		if builtins := Builtins(spi.KindMetricsSink); !slices.Contains(builtins, s) && !nameRE.MatchString(s) {
			return fmt.Errorf("%q is not a metrics sink name: use a built-in sink (%s) or the name of a plugin egret-metricssink-<name> (lower-case letters, digits, - and _)", s, strings.Join(builtins, ", "))
		}
	}
	return nil
}

// didYouMean returns " (did you mean X?)" for the nearest candidate within
// maxDist edits, or "".
func didYouMean(s string, candidates []string, maxDist int) string {
	if near, d := names.Closest(s, candidates); d <= maxDist {
		return fmt.Sprintf(" (did you mean %s?)", near)
	}
	return ""
}
