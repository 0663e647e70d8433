package treehash

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
)

// Tree maps the slash path of every entry below a root (the root itself is
// ".") to a description of it: its type and permissions, and the SHA-256
// of a file's content or a link's target.
type Tree map[string]string

// Of walks root without following symbolic links. A root that does not
// exist gives an empty tree.
func Of(root string) (Tree, error) {
	t := Tree{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == root && errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		desc := info.Mode().String()
		switch {
		case info.Mode().IsRegular():
			sum, err := fileSHA256(p)
			if err != nil {
				return err
			}
			desc += " " + sum
		case info.Mode()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			desc += " -> " + target
		}
		t[filepath.ToSlash(rel)] = desc
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("treehash %s: %w", root, err)
	}
	return t, nil
}

func fileSHA256(p string) (string, error) {
	f, err := os.Open(p)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// Diff lists, sorted, every entry that was added, removed or changed from
// t to other, one line each ("+ path", "- path", "~ path"); nil when the
// trees are equal.
func (t Tree) Diff(other Tree) []string {
	var out []string
	for p, d := range t {
		switch o, ok := other[p]; {
		case !ok:
			out = append(out, "- "+p)
		case o != d:
			out = append(out, "~ "+p)
		}
	}
	for p := range other {
		if _, ok := t[p]; !ok {
			out = append(out, "+ "+p)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i][2:] < out[j][2:] })
	return out
}
