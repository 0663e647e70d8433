package spi

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/egret-stream/egret/core/topology"
)

// Config is the flat, resolved key/value configuration handed to a backend
// factory: the cluster's operator config after ${VAR} substitution and
// --config-property overrides, with keys such as
// "egret.statemgr.root.path". It is a plain map so that it crosses the plugin
// boundary unchanged. Config values are never mutated by a backend.
type Config map[string]string

// String returns the value of key, or def when the key is absent or empty.
func (c Config) String(key, def string) string {
	noteRead(key)
	if v, ok := c[key]; ok && v != "" {
		return v
	}
	return def
}

// Int returns the value of key parsed as an integer, def when absent.
func (c Config) Int(key string, def int) (int, error) {
	noteRead(key)
	v, ok := c[key]
	if !ok || v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil {
		return 0, fmt.Errorf("config key %s: %q is not an integer", key, v)
	}
	return n, nil
}

// Float returns the value of key parsed as a float, def when absent.
func (c Config) Float(key string, def float64) (float64, error) {
	noteRead(key)
	v, ok := c[key]
	if !ok || v == "" {
		return def, nil
	}
	f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
	if err != nil {
		return 0, fmt.Errorf("config key %s: %q is not a number", key, v)
	}
	return f, nil
}

// Bool returns the value of key parsed as a boolean, def when absent.
func (c Config) Bool(key string, def bool) (bool, error) {
	noteRead(key)
	v, ok := c[key]
	if !ok || v == "" {
		return def, nil
	}
	b, err := strconv.ParseBool(strings.TrimSpace(v))
	if err != nil {
		return false, fmt.Errorf("config key %s: %q is not a boolean (use true or false)", key, v)
	}
	return b, nil
}

// Duration returns the value of key parsed with time.ParseDuration ("1500ms",
// "30s"), def when absent.
func (c Config) Duration(key string, def time.Duration) (time.Duration, error) {
	noteRead(key)
	v, ok := c[key]
	if !ok || v == "" {
		return def, nil
	}
	d, err := time.ParseDuration(strings.TrimSpace(v))
	if err != nil {
		return 0, fmt.Errorf("config key %s: %q is not a duration (for example 500ms, 30s, 2m)", key, v)
	}
	return d, nil
}

// Lookup returns the value of key and whether it is set.
func (c Config) Lookup(key string) (string, bool) {
	noteRead(key)
	v, ok := c[key]
	return v, ok
}

// keysRead records every key a backend or daemon looked up through a
// Config method, for KeysRead. It only grows, up to the number of distinct
// keys read.
var keysRead sync.Map

// noteRead records that key was read; the first read of each key in a
// process is also appended to the file keys-<pid> of the directory
// $EGRET_KEYS_READ_DIR when that is set: `make test` collects there the
// keys read across every test and every daemon the tests start, and
// scripts/keysread fails on a documented key that nothing read.
func noteRead(key string) {
	if _, seen := keysRead.LoadOrStore(key, struct{}{}); seen {
		return
	}
	dir := keysReadDir()
	if dir == "" {
		return
	}
	f, err := os.OpenFile(filepath.Join(dir, "keys-"+strconv.Itoa(os.Getpid())), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return // the record is a test aid; reading the key goes on
	}
	_, _ = f.WriteString(key + "\n")
	_ = f.Close()
}

// MarkRead records key as read by code that reads it without a Config
// method (the config loader's own keys).
func MarkRead(key string) { noteRead(key) }

// KeysReadDirEnv names the directory noteRead appends to.
const KeysReadDirEnv = "EGRET_KEYS_READ_DIR"

var keysReadDir = sync.OnceValue(func() string { return os.Getenv(KeysReadDirEnv) })

// KeysRead returns the keys looked up through Config's methods in this
// process, sorted. A test that drives a backend's config parsing uses it
// to prove that every key the backend declares is read.
func KeysRead() []string {
	var out []string
	keysRead.Range(func(k, _ any) bool {
		out = append(out, k.(string))
		return true
	})
	sort.Strings(out)
	return out
}

// ReadConfigFile reads a resolved config written as a JSON object (what
// the launcher puts into a topology's package for its daemons).
func ReadConfigFile(path string) (Config, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var cfg Config
	if err := json.Unmarshal(b, &cfg); err != nil {
		return nil, fmt.Errorf("%s is not a cluster config: %w", path, err)
	}
	return cfg, nil
}

// Keys returns the keys in sorted order.
func (c Config) Keys() []string {
	keys := make([]string, 0, len(c))
	for k := range c {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// Clone returns a copy that may be changed without affecting c.
func (c Config) Clone() Config {
	out := make(Config, len(c))
	for k, v := range c {
		out[k] = v
	}
	return out
}

// Size returns the value of key parsed as a byte size ("64MiB", "1GB",
// "1048576"), def when absent. It must be between 1 and max bytes.
func (c Config) Size(key string, def, max int) (int, error) {
	noteRead(key)
	v, ok := c[key]
	if !ok || v == "" {
		return def, nil
	}
	n, err := topology.ParseBytes(v)
	if err != nil {
		return 0, fmt.Errorf("config key %s: %w", key, err)
	}
	if n <= 0 || n > int64(max) {
		return 0, fmt.Errorf("config key %s: %q is out of range (1 byte to %d bytes)", key, v, max)
	}
	return int(n), nil
}
