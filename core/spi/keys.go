package spi

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The backend kinds, as a cluster config selects them and as plugin
// binaries name them (egret-<kind>-<name>).
const (
	KindScheduler    = "scheduler"
	KindStateManager = "statemgr"
	KindUploader     = "uploader"
	KindPacking      = "packing"
	KindMetricsSink  = "metricssink"
	// KindCheckpointStorage is the kind of the effectively-once
	// checkpoint storages.
	KindCheckpointStorage = "checkpointstorage"
)

// Kinds lists every backend kind.
var Kinds = []string{KindScheduler, KindStateManager, KindUploader, KindPacking, KindMetricsSink, KindCheckpointStorage}

// KeyType is the type of a configuration value. Values are always stored
// as strings; the type says how they are checked and canonicalized.
type KeyType int

// The value types of configuration keys.
const (
	KeyString   KeyType = iota // any text
	KeyInt                     // decimal integer
	KeyFloat                   // decimal number
	KeyBool                    // true or false (canonical form)
	KeyDuration                // Go duration: 500ms, 30s, 2m
	KeyBytes                   // byte count, or a size such as 64KiB, 100MiB, 1GB
	KeyEnum                    // one of Key.Enum
	KeyList                    // YAML sequence or comma-separated string; stored comma-separated
)

var keyTypeNames = []string{"string", "int", "float", "bool", "duration", "bytes", "enum", "list"}

func (t KeyType) String() string {
	if t >= 0 && int(t) < len(keyTypeNames) {
		return keyTypeNames[t]
	}
	return fmt.Sprintf("KeyType(%d)", int(t))
}

// ParseKeyType is the inverse of KeyType.String.
func ParseKeyType(s string) (KeyType, error) {
	if i := slices.Index(keyTypeNames, s); i >= 0 {
		return KeyType(i), nil
	}
	return 0, fmt.Errorf("%q is not a key type (%s)", s, strings.Join(keyTypeNames, ", "))
}

// Key declares one configuration key a backend reads: a backend registers
// its keys with its factory (RegisterScheduler("nomad", New, keys...)),
// and package conf derives the documented schema (conf/REFERENCE.md),
// defaults and validation from them. An external plugin declares its keys
// the same way (plugins.WithKeys).
type Key struct {
	Name string // lower-case, dotted, starting with egret.
	Type KeyType
	// Default is the value used when no file sets the key, only when the
	// backend is selected; it may contain ${VAR} references.
	Default string
	// Required keys must have a non-empty value when the backend is
	// selected.
	Required bool
	// Enum lists the allowed values of a KeyEnum key.
	Enum []string
	Doc  string
	// Check validates the canonical value beyond its type; nil: none.
	// It runs in the process that loads the config, so it does not cross
	// the plugin boundary (a plugin checks its values when configured).
	Check func(value string) error
}

// Validate reports what is wrong with the declaration itself.
func (k Key) Validate() error {
	switch {
	case k.Name != strings.ToLower(k.Name) || !strings.HasPrefix(k.Name, "egret.") || strings.HasSuffix(k.Name, ".") || strings.Contains(k.Name, ".."):
		return fmt.Errorf("key %q: keys are lower-case dotted names starting with \"egret.\"", k.Name)
	case k.Doc == "":
		return fmt.Errorf("key %s: no doc", k.Name)
	case (k.Type == KeyEnum) != (len(k.Enum) > 0):
		return fmt.Errorf("key %s: enum values only and always for enum keys", k.Name)
	case k.Type < KeyString || k.Type > KeyList:
		return fmt.Errorf("key %s: unknown type %v", k.Name, k.Type)
	}
	return nil
}

// ---- checks of canonical values, for Key.Check ----

// Numeric reads a canonical number or duration (as nanoseconds), for
// checks and comparisons of values.
func Numeric(v string) (float64, bool) {
	if f, err := strconv.ParseFloat(v, 64); err == nil {
		return f, true
	}
	if d, err := time.ParseDuration(v); err == nil {
		return float64(d), true
	}
	return 0, false
}

// CheckPositive accepts a number or duration greater than zero.
func CheckPositive(v string) error {
	if f, ok := Numeric(v); ok && f <= 0 {
		return fmt.Errorf("%q must be greater than zero", v)
	}
	return nil
}

// CheckNonNegative accepts a number or duration that is not negative.
func CheckNonNegative(v string) error {
	if f, ok := Numeric(v); ok && f < 0 {
		return fmt.Errorf("%q must not be negative", v)
	}
	return nil
}

// CheckHTTPURL accepts an http:// or https:// URL, or nothing.
func CheckHTTPURL(v string) error {
	if v == "" {
		return nil
	}
	u, err := url.Parse(v)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%q is not an http:// or https:// URL", v)
	}
	return nil
}

// CheckPort accepts a port number, 0 to 65535.
func CheckPort(v string) error {
	if n, err := strconv.Atoi(v); err != nil || n < 0 || n > 65535 {
		return fmt.Errorf("%q is not a port (0 to 65535)", v)
	}
	return nil
}

// CheckHostPorts accepts host:port[,host:port...], or nothing.
func CheckHostPorts(v string) error {
	if v == "" {
		return nil
	}
	for _, hp := range strings.Split(v, ",") {
		hp = strings.TrimSpace(hp)
		host, port, err := net.SplitHostPort(hp)
		if err == nil && host == "" {
			err = errors.New("empty host")
		}
		if err == nil {
			var n int
			n, err = strconv.Atoi(port)
			if err == nil && (n < 1 || n > 65535) {
				err = errors.New("bad port")
			}
		}
		if err != nil {
			return fmt.Errorf("%q is not a list of host:port (item %q)", v, hp)
		}
	}
	return nil
}
