package manifest

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/egret-stream/egret/conf"
	"github.com/egret-stream/egret/core/names"
)

// Topology is one entry of a manifest.
type Topology struct {
	Name    string
	Cluster string // cluster[/role[/env]]
	Binary  string
	Args    []string
	// Config are config properties (key=value) of every command run for
	// the topology, sorted by key.
	Config []string
	// Parallelism and Containers are the scale the topology must have (nil
	// and 0: the binary's own).
	Parallelism map[string]int
	Containers  int
	// File and Line say where the entry is.
	File string
	Line int
}

// Where is "file:line" of the entry.
func (t Topology) Where() string { return fmt.Sprintf("%s:%d", t.File, t.Line) }

// Key identifies a topology across manifests: its cluster argument and
// name.
func (t Topology) Key() string { return t.Cluster + " " + t.Name }

// Load reads the manifest files at path: a file, or every .yaml and .yml
// file of a directory (in name order). A topology listed twice is an
// error. Relative binaries are resolved against the file's directory.
func Load(path string) ([]Topology, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	files := []string{path}
	if fi.IsDir() {
		files = nil
		entries, err := os.ReadDir(path)
		if err != nil {
			return nil, err
		}
		for _, e := range entries {
			if !e.IsDir() && (strings.HasSuffix(e.Name(), ".yaml") || strings.HasSuffix(e.Name(), ".yml")) {
				files = append(files, filepath.Join(path, e.Name()))
			}
		}
		if len(files) == 0 {
			return nil, fmt.Errorf("%s: no .yaml or .yml manifest in the directory", path)
		}
	}
	var out []Topology
	seen := map[string]string{}
	var errs []error
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		ts, err := Parse(f, b)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, t := range ts {
			if prev, ok := seen[t.Key()]; ok {
				errs = append(errs, fmt.Errorf("%s: topology %q of %s is already listed at %s", t.Where(), t.Name, t.Cluster, prev))
				continue
			}
			seen[t.Key()] = t.Where()
			out = append(out, t)
		}
	}
	return out, errors.Join(errs...)
}

// Parse reads one manifest; file names it in errors and resolves relative
// binaries.
func Parse(file string, b []byte) ([]Topology, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return nil, fmt.Errorf("%s: %s", file, strings.TrimPrefix(err.Error(), "yaml: "))
	}
	if len(doc.Content) == 0 {
		return nil, fmt.Errorf("%s: empty manifest: list topologies under `topologies:`", file)
	}
	root := doc.Content[0]
	p := parser{file: file}
	if root.Kind != yaml.MappingNode {
		return nil, p.errorf(root, "a manifest is a mapping with the key topologies")
	}
	var list *yaml.Node
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], root.Content[i+1]
		if k.Value != "topologies" {
			return nil, p.errorf(k, "unknown key %q: a manifest has the key topologies only", k.Value)
		}
		list = v
	}
	if list == nil || list.Kind != yaml.SequenceNode {
		return nil, p.errorf(root, "topologies must be a list of topologies")
	}
	var out []Topology
	var errs []error
	for _, n := range list.Content {
		t, err := p.topology(n)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out = append(out, t)
	}
	return out, errors.Join(errs...)
}

type parser struct{ file string }

func (p parser) errorf(n *yaml.Node, format string, args ...any) error {
	return fmt.Errorf("%s:%d: %s", p.file, n.Line, fmt.Sprintf(format, args...))
}

var fields = []string{"name", "cluster", "binary", "args", "config", "parallelism", "containers"}

func (p parser) topology(n *yaml.Node) (Topology, error) {
	t := Topology{File: p.file, Line: n.Line}
	if n.Kind != yaml.MappingNode {
		return t, p.errorf(n, "a topology is a mapping of %s", strings.Join(fields, ", "))
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		var err error
		switch k.Value {
		case "name":
			t.Name, err = p.scalar(v, k.Value)
			if err == nil {
				if nerr := names.Check(names.Topology, t.Name); nerr != nil {
					err = p.errorf(v, "name: %v", nerr)
				}
			}
		case "cluster":
			t.Cluster, err = p.scalar(v, k.Value)
			if err == nil {
				if _, _, _, cerr := conf.ParseClusterRoleEnv(t.Cluster); cerr != nil {
					err = p.errorf(v, "cluster: %v", cerr)
				}
			}
		case "binary":
			t.Binary, err = p.scalar(v, k.Value)
		case "args":
			t.Args, err = p.strings(v, k.Value)
		case "config":
			t.Config, err = p.config(v)
		case "parallelism":
			t.Parallelism, err = p.parallelism(v)
		case "containers":
			var c int
			if err = v.Decode(&c); err != nil || c < 1 || v.Kind != yaml.ScalarNode {
				err = p.errorf(v, "containers: %q is not a positive integer", v.Value)
			}
			t.Containers = c
		default:
			err = p.errorf(k, "unknown key %q: a topology has %s", k.Value, strings.Join(fields, ", "))
		}
		if err != nil {
			return t, err
		}
	}
	for _, req := range []struct{ key, v string }{{"name", t.Name}, {"cluster", t.Cluster}, {"binary", t.Binary}} {
		if req.v == "" {
			return t, p.errorf(n, "the topology lacks %s", req.key)
		}
	}
	if strings.HasPrefix(t.Binary, "./") || strings.HasPrefix(t.Binary, "../") {
		// Relative to the manifest; kept a path (not an import path).
		t.Binary = filepath.Join(filepath.Dir(p.file), t.Binary)
		if !filepath.IsAbs(t.Binary) {
			t.Binary = "." + string(filepath.Separator) + t.Binary
		}
	}
	return t, nil
}

func (p parser) scalar(v *yaml.Node, key string) (string, error) {
	if v.Kind != yaml.ScalarNode || v.Value == "" {
		return "", p.errorf(v, "%s must be a non-empty string", key)
	}
	return v.Value, nil
}

func (p parser) strings(v *yaml.Node, key string) ([]string, error) {
	if v.Kind != yaml.SequenceNode {
		return nil, p.errorf(v, "%s must be a list of strings", key)
	}
	var out []string
	for _, e := range v.Content {
		if e.Kind != yaml.ScalarNode {
			return nil, p.errorf(e, "%s must be a list of strings", key)
		}
		out = append(out, e.Value)
	}
	return out, nil
}

func (p parser) config(v *yaml.Node) ([]string, error) {
	if v.Kind != yaml.MappingNode {
		return nil, p.errorf(v, "config must be a mapping of config keys to values")
	}
	var out []string
	for i := 0; i+1 < len(v.Content); i += 2 {
		k, val := v.Content[i], v.Content[i+1]
		if !strings.HasPrefix(k.Value, "egret.") {
			return nil, p.errorf(k, "config key %q: Egret keys start with egret.", k.Value)
		}
		if val.Kind != yaml.ScalarNode {
			return nil, p.errorf(val, "config key %s: the value must be a scalar", k.Value)
		}
		out = append(out, k.Value+"="+val.Value)
	}
	sort.Strings(out)
	return out, nil
}

func (p parser) parallelism(v *yaml.Node) (map[string]int, error) {
	if v.Kind != yaml.MappingNode {
		return nil, p.errorf(v, "parallelism must be a mapping of component names to task counts")
	}
	out := map[string]int{}
	for i := 0; i+1 < len(v.Content); i += 2 {
		k, val := v.Content[i], v.Content[i+1]
		var n int
		if err := val.Decode(&n); err != nil || n < 1 || val.Kind != yaml.ScalarNode {
			return nil, p.errorf(val, "parallelism of %s: %q is not a positive integer", k.Value, val.Value)
		}
		if _, dup := out[k.Value]; dup {
			return nil, p.errorf(k, "parallelism of %s is given twice", k.Value)
		}
		out[k.Value] = n
	}
	return out, nil
}

// Components returns the components of t's parallelism, sorted.
func (t Topology) Components() []string {
	out := make([]string, 0, len(t.Parallelism))
	for c := range t.Parallelism {
		out = append(out, c)
	}
	slices.Sort(out)
	return out
}
