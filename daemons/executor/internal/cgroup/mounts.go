package cgroup

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// mount is one cgroup mount of /proc/self/mountinfo.
type mount struct {
	fstype string   // cgroup or cgroup2
	root   string   // the mount's root within the hierarchy
	point  string   // where it is mounted
	opts   []string // super options: the v1 controllers
}

type mountTable []mount

// find returns the mount of fstype (with controller ctl for v1).
func (t mountTable) find(fstype, ctl string) *mount {
	for i := range t {
		m := &t[i]
		if m.fstype == fstype && (ctl == "" || contains(m.opts, ctl)) {
			return m
		}
	}
	return nil
}

// resolve maps a cgroup path of /proc/self/cgroup to its directory.
func (m *mount) resolve(p string) string {
	rel := p
	if m.root != "/" {
		if r, ok := strings.CutPrefix(p, m.root); ok {
			rel = r
		}
	}
	return filepath.Join(m.point, filepath.FromSlash(rel))
}

func readMounts(path string) (mountTable, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("cgroup: %w", err)
	}
	return parseMounts(b), nil
}

// parseMounts reads mountinfo: "id parent maj:min root point opts
// [optional...] - fstype source superopts".
func parseMounts(b []byte) mountTable {
	var out mountTable
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		if !ok {
			continue
		}
		f, g := strings.Fields(pre), strings.Fields(post)
		if len(f) < 5 || len(g) < 3 || (g[0] != "cgroup" && g[0] != "cgroup2") {
			continue
		}
		out = append(out, mount{fstype: g[0], root: unescape(f[3]), point: unescape(f[4]), opts: strings.Split(g[2], ",")})
	}
	return out
}

// unescape decodes mountinfo's octal escapes (\040 for a space).
func unescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			var v byte
			okay := true
			for _, c := range []byte(s[i+1 : i+4]) {
				if c < '0' || c > '7' {
					okay = false
					break
				}
				v = v*8 + c - '0'
			}
			if okay {
				b.WriteByte(v)
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func readSelf(path string) (map[string]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("cgroup: %w", err)
	}
	return parseSelf(b), nil
}

// parseSelf reads /proc/self/cgroup ("id:controllers:path") into a map
// from controller to path; the v2 path is under "".
func parseSelf(b []byte) map[string]string {
	out := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		parts := strings.SplitN(sc.Text(), ":", 3)
		if len(parts) != 3 {
			continue
		}
		if parts[0] == "0" && parts[1] == "" {
			out[""] = parts[2]
			continue
		}
		for _, c := range strings.Split(parts[1], ",") {
			if c != "" {
				out[c] = parts[2]
			}
		}
	}
	return out
}
