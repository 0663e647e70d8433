package conf

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/egret-stream/egret/core/names"
	"github.com/egret-stream/egret/core/spi"
)

// Cluster is a loaded, validated cluster configuration. It is immutable and
// safe for concurrent use.
type Cluster struct {
	Name     string
	Role     string
	Environ  string
	Topology string // "" when loaded without a topology

	cfg     spi.Config
	origin  map[string]string
	sources []string
	opts    LoadOptions
	// resolved: built by Resolved from a configuration already resolved
	// for Topology; there is nothing to load again.
	resolved bool
}

// Resolved wraps a configuration already resolved for a topology (the
// one a topology package carries, spi.ReadConfigFile) so that a process
// inside a container can run launcher operations on that topology. Its
// WithTopology accepts only that topology.
func Resolved(cfg spi.Config, cluster, role, environ, topology string) *Cluster {
	return &Cluster{Name: cluster, Role: role, Environ: environ, Topology: topology, cfg: cfg.Clone(), origin: map[string]string{}, resolved: true}
}

// Config returns a copy of the resolved flat configuration, every value a
// string in canonical form (sizes in bytes, booleans true/false, lists
// comma-separated).
func (c *Cluster) Config() spi.Config { return c.cfg.Clone() }

// Origin returns where the value of key was set: "default" (the schema),
// "embedded:clusters/<cluster>/<file>.yaml", the path of an operator file,
// or "--config-property"; "" for a key that is not set.
func (c *Cluster) Origin(key string) string { return c.origin[strings.ToLower(key)] }

// Sources lists the files that were read, in load order.
func (c *Cluster) Sources() []string { return slices.Clone(c.sources) }

// WithTopology loads the same cluster again with ${TOPOLOGY} bound to name.
func (c *Cluster) WithTopology(name string) (*Cluster, error) {
	if c.resolved {
		if name != c.Topology {
			return nil, fmt.Errorf("the configuration is resolved for topology %q, not %q", c.Topology, name)
		}
		return c, nil
	}
	opts := c.opts
	opts.Topology = name
	opts.Role, opts.Environ = c.Role, c.Environ
	return Load(opts)
}

// Lookup returns the value of key and whether it is set.
func (c *Cluster) Lookup(key string) (string, bool) {
	return c.cfg.Lookup(strings.ToLower(key))
}

// String returns the value of key, "" when it is not set.
func (c *Cluster) String(key string) string {
	v, _ := c.Lookup(key)
	return v
}

func (c *Cluster) get(key string) (string, error) {
	v, ok := c.Lookup(key)
	if !ok || strings.TrimSpace(v) == "" {
		return "", fmt.Errorf("config key %s is not set in cluster %s", key, c.Name)
	}
	return strings.TrimSpace(v), nil
}

// Int returns the value of key as an int.
func (c *Cluster) Int(key string) (int, error) {
	v, err := c.get(key)
	if err != nil {
		return 0, err
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return 0, fmt.Errorf("config key %s: %q is not an integer", key, v)
	}
	return n, nil
}

// Float returns the value of key as a float64.
func (c *Cluster) Float(key string) (float64, error) {
	v, err := c.get(key)
	if err != nil {
		return 0, err
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil {
		return 0, fmt.Errorf("config key %s: %q is not a number", key, v)
	}
	return f, nil
}

// Bool returns the value of key as a bool.
func (c *Cluster) Bool(key string) (bool, error) {
	v, err := c.get(key)
	if err != nil {
		return false, err
	}
	b, ok := parseBool(v)
	if !ok {
		return false, fmt.Errorf("config key %s: %q is not a boolean", key, v)
	}
	return b, nil
}

// Duration returns the value of key as a time.Duration.
func (c *Cluster) Duration(key string) (time.Duration, error) {
	v, err := c.get(key)
	if err != nil {
		return 0, err
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		return 0, fmt.Errorf("config key %s: %q is not a duration", key, v)
	}
	return d, nil
}

// Bytes returns the value of key as a byte count (sizes such as 64MiB are
// accepted for keys outside the schema).
func (c *Cluster) Bytes(key string) (int64, error) {
	v, err := c.get(key)
	if err != nil {
		return 0, err
	}
	n, err := ParseBytes(v)
	if err != nil {
		return 0, fmt.Errorf("config key %s: %w", key, err)
	}
	return n, nil
}

// List returns the items of a comma-separated value; nil when unset.
func (c *Cluster) List(key string) []string { return splitList(c.String(key)) }

// ParseClusterRoleEnv splits the CLI's cluster[/role[/env]] argument and
// checks each part with its rule (core/names). Role and env are "" when not
// given.
func ParseClusterRoleEnv(s string) (cluster, role, env string, err error) {
	if strings.TrimSpace(s) == "" {
		return "", "", "", fmt.Errorf("no cluster given: expected cluster[/role[/env]], for example local or aurora/www-data/prod")
	}
	parts := strings.Split(s, "/")
	if len(parts) > 3 {
		return "", "", "", fmt.Errorf("%s has %d parts: expected cluster[/role[/env]]", names.Quote(s), len(parts))
	}
	kinds := []names.Kind{names.Cluster, names.Role, names.Environ}
	for i, p := range parts {
		if err := names.Check(kinds[i], p); err != nil {
			return "", "", "", fmt.Errorf("%s: %w", names.Quote(s), err)
		}
	}
	parts = append(parts, "", "")
	return parts[0], parts[1], parts[2], nil
}
