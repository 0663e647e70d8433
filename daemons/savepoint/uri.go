package savepoint

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/egret-stream/egret/core/names"
	"github.com/egret-stream/egret/core/spi"
)

// Location is where a savepoint is, or a directory of savepoints: a
// checkpoint storage (localfs or hdfs) rooted at Root, and the savepoint's
// name (its namespace in that storage; "" for a directory).
type Location struct {
	// Storage is "localfs" or "hdfs".
	Storage string
	// NameNode is the HDFS namenode (host:port) of an hdfs location.
	NameNode string
	// Root is the directory holding the savepoints (absolute).
	Root string
	Name string
}

// ParseDir parses the URI of a directory of savepoints: a path (relative
// paths are made absolute), file:///path or hdfs://host:port/path.
func ParseDir(uri string) (Location, error) {
	if uri == "" {
		return Location{}, errors.New("no savepoint directory given (a path, file:///path or hdfs://namenode:port/path)")
	}
	if !strings.Contains(uri, "://") {
		abs, err := filepath.Abs(uri)
		if err != nil {
			return Location{}, err
		}
		return Location{Storage: "localfs", Root: abs}, nil
	}
	u, err := url.Parse(uri)
	if err != nil {
		return Location{}, fmt.Errorf("savepoint URI %q: %w", uri, err)
	}
	if u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return Location{}, fmt.Errorf("savepoint URI %q: a query, fragment or user is not allowed", uri)
	}
	p := path.Clean("/" + u.Path)
	switch u.Scheme {
	case "file":
		if u.Host != "" && u.Host != "localhost" {
			return Location{}, fmt.Errorf("savepoint URI %q: a file URI names no host (file:///path)", uri)
		}
		return Location{Storage: "localfs", Root: p}, nil
	case "hdfs":
		if u.Host == "" || u.Port() == "" {
			return Location{}, fmt.Errorf("savepoint URI %q: an hdfs URI names the namenode with its port (hdfs://namenode:8020/path)", uri)
		}
		return Location{Storage: "hdfs", NameNode: u.Host, Root: p}, nil
	}
	return Location{}, fmt.Errorf("savepoint URI %q: scheme %q is not file or hdfs", uri, u.Scheme)
}

// Parse parses the URI of a savepoint: its directory's URI followed by
// /<name>, a name of the form of a topology name.
func Parse(uri string) (Location, error) {
	l, err := ParseDir(uri)
	if err != nil {
		return l, err
	}
	if l.Root == "/" {
		return l, fmt.Errorf("savepoint URI %q names no savepoint (…/<name>)", uri)
	}
	l.Root, l.Name = path.Dir(l.Root), path.Base(l.Root)
	if err := names.Check(names.Topology, l.Name); err != nil {
		return l, fmt.Errorf("savepoint URI %q: the savepoint's name: %w", uri, err)
	}
	return l, nil
}

// Join returns the location of the savepoint name in the directory l.
func (l Location) Join(name string) (Location, error) {
	if err := names.Check(names.Topology, name); err != nil {
		return l, fmt.Errorf("savepoint name: %w", err)
	}
	l.Name = name
	return l, nil
}

// URI returns the location as a URI.
func (l Location) URI() string {
	p := l.Root
	if l.Name != "" {
		p = path.Join(p, l.Name)
	}
	if l.Storage == "hdfs" {
		return "hdfs://" + l.NameNode + p
	}
	return p
}

// Config returns base with the keys that select and root the location's
// storage (the other keys, hdfs user and timeouts, stay base's).
func (l Location) Config(base spi.Config) spi.Config {
	c := maps.Clone(base)
	if c == nil {
		c = spi.Config{}
	}
	c["egret.checkpoint.storage"] = l.Storage
	if l.Storage == "hdfs" {
		c["egret.checkpoint.hdfs.namenode"] = l.NameNode
		c["egret.checkpoint.hdfs.directory"] = l.Root
	} else {
		c["egret.checkpoint.localfs.root"] = l.Root
	}
	return c
}

// Read reads the manifest of the savepoint at l.Name in st. A savepoint
// that does not exist (no manifest) is an error wrapping spi.ErrNotFound.
func Read(ctx context.Context, st spi.CheckpointFiles, l Location) (*Manifest, error) {
	r, err := st.OpenFile(ctx, l.Name, ManifestFile)
	if err != nil {
		if errors.Is(err, spi.ErrNotFound) {
			return nil, fmt.Errorf("no savepoint at %s (no %s in it): %w", l.URI(), ManifestFile, err)
		}
		return nil, fmt.Errorf("savepoint %s: %w", l.URI(), err)
	}
	defer r.Close()
	if r.Size() > maxManifest {
		return nil, fmt.Errorf("savepoint %s: %w: a %d-byte manifest", l.URI(), ErrCorrupt, r.Size())
	}
	b := make([]byte, 0, r.Size())
	if b, err = readAll(r, b); err != nil {
		return nil, fmt.Errorf("savepoint %s: %w", l.URI(), err)
	}
	m, err := Decode(b)
	if err != nil {
		return nil, fmt.Errorf("savepoint %s: %w", l.URI(), err)
	}
	return m, nil
}

// Verify checks that every file the manifest names is in the savepoint
// with its size (Seed checks the hashes as it copies).
func Verify(ctx context.Context, st spi.CheckpointFiles, l Location, m *Manifest) error {
	infos, err := st.ListFiles(ctx, l.Name)
	if err != nil {
		return fmt.Errorf("savepoint %s: %w", l.URI(), err)
	}
	sizes := map[string]int64{}
	for _, f := range infos {
		sizes[f.Name] = f.Size
	}
	for _, c := range m.Components {
		for _, t := range c.Tasks {
			for _, f := range t.Manifest.Files {
				if got, ok := sizes[f.Name]; !ok || got != f.Size {
					return fmt.Errorf("savepoint %s: %w: file %s of task %d (%s) is missing or has %d bytes, its manifest says %d", l.URI(), ErrCorrupt, f.Name, t.Task, c.Name, got, f.Size)
				}
			}
		}
	}
	return nil
}

// Delete removes the savepoint at l.Name: its manifest first (it stops
// being a savepoint), then its other files.
func Delete(ctx context.Context, st spi.CheckpointFiles, l Location) error {
	if _, err := st.OpenFile(ctx, l.Name, ManifestFile); err != nil {
		if errors.Is(err, spi.ErrNotFound) {
			return fmt.Errorf("no savepoint at %s: %w", l.URI(), err)
		}
		return err
	}
	if err := st.DeleteFile(ctx, l.Name, ManifestFile); err != nil {
		return fmt.Errorf("delete savepoint %s: %w", l.URI(), err)
	}
	infos, err := st.ListFiles(ctx, l.Name)
	if err != nil {
		return fmt.Errorf("delete savepoint %s: %w", l.URI(), err)
	}
	for _, f := range infos {
		if err := st.DeleteFile(ctx, l.Name, f.Name); err != nil {
			return fmt.Errorf("delete savepoint %s: %w", l.URI(), err)
		}
	}
	return nil
}

// Names lists the savepoints of a local directory (a localfs location):
// the names whose manifest exists. Another storage has no listing of
// names through the SPI.
func Names(l Location) ([]string, error) {
	if l.Storage != "localfs" {
		return nil, fmt.Errorf("listing savepoints needs a local directory; on %s, describe a savepoint by its URI: %w", l.Storage, spi.ErrUnsupported)
	}
	entries, err := os.ReadDir(l.Root)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range entries {
		if names.Check(names.Topology, e.Name()) != nil {
			continue
		}
		if _, err := os.Stat(filepath.Join(l.Root, e.Name(), "files", ManifestFile)); err == nil {
			out = append(out, e.Name())
		}
	}
	sort.Strings(out)
	return out, nil
}
