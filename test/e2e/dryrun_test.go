package e2e

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/egret-stream/egret/schedulers/nomad"
)

// countingListener accepts TCP connections, counts and closes them: a
// server address a dry run must not contact.
type countingListener struct {
	ln    net.Listener
	count atomic.Int64
	done  chan struct{}
}

func newCountingListener(t *testing.T) *countingListener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := &countingListener{ln: ln, done: make(chan struct{})}
	go func() {
		defer close(l.done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			l.count.Add(1)
			c.Close()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		<-l.done
	})
	return l
}

func (l *countingListener) addr() string { return l.ln.Addr().String() }

// treeDigest maps every path below dir to its type, mode and content
// digest.
func treeDigest(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		v := info.Mode().String()
		if d.Type().IsRegular() {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			sum := sha256.Sum256(b)
			v += " " + hex.EncodeToString(sum[:])
		}
		out[p] = v
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func sameTree(t *testing.T, what string, before, after map[string]string) {
	t.Helper()
	for p, v := range after {
		if w, ok := before[p]; !ok {
			t.Errorf("%s created %s", what, p)
		} else if w != v {
			t.Errorf("%s changed %s", what, p)
		}
	}
	for p := range before {
		if _, ok := after[p]; !ok {
			t.Errorf("%s removed %s", what, p)
		}
	}
}

// TestDryRunTouchesNothing runs a dry run of every format on the local,
// localzk, nomad and kubernetes clusters whose state manager, package
// server and resource manager all point at an address that counts
// connections: the dry run
// prints the plan or the job, writes no file (EGRET_HOME and the temporary
// directory are as before), writes no state, uploads no package and
// contacts no server.
func TestDryRunTouchesNothing(t *testing.T) {
	wc := binary(t, "wordcount")
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	for _, tc := range []struct {
		cluster string
		props   func(addr string) []string
	}{
		{"local", func(string) []string { return nil }},
		{"localzk", func(addr string) []string {
			return []string{"egret.statemgr.connection.string=" + addr, "egret.statemgr.connection.timeout=2s"}
		}},
		{"nomad", func(addr string) []string {
			return []string{"egret.statemgr.connection.string=" + addr, "egret.statemgr.connection.timeout=2s",
				"egret.nomad.address=http://" + addr, "egret.uploader.http.uri=http://" + addr + "/packages/"}
		}},
		{"kubernetes", func(addr string) []string {
			doc := "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: http://" + addr +
				"\nusers:\n- name: u\n  user: {}\ncontexts:\n- name: c\n  context:\n    cluster: c\n    user: u\ncurrent-context: c\n"
			if err := os.WriteFile(kubeconfig, []byte(doc), 0o600); err != nil {
				t.Fatal(err)
			}
			return []string{"egret.statemgr.connection.string=" + addr, "egret.statemgr.connection.timeout=2s",
				"egret.kubernetes.kubeconfig=" + kubeconfig, "egret.uploader.http.uri=http://" + addr + "/packages/"}
		}},
	} {
		t.Run(tc.cluster, func(t *testing.T) {
			srv := newCountingListener(t)
			addr := srv.addr()
			c := newCluster(t, tc.cluster, tc.props(addr)...)
			tmp := t.TempDir()
			c.env = []string{"TMPDIR=" + tmp}
			sched := "local"
			if tc.cluster == "nomad" || tc.cluster == "kubernetes" {
				sched = tc.cluster
			}
			formats := []string{"table", "json", sched + "-json"}
			if sched == "kubernetes" {
				formats = append(formats, "kubernetes-yaml")
			}
			for _, format := range formats {
				before := treeDigest(t, c.home)
				stdout, stderr, code := c.egret("submit", c.name, wc, "--dry-run", "--dry-run-format", format, "--", "--containers", "2")
				switch {
				case format == "local-json":
					lastLineError(t, format, stderr, code, 2, "the local scheduler cannot show its job")
				case format == "kubernetes-json":
					lastLineError(t, format, stderr, code, 2, "the kubernetes scheduler shows its job as kubernetes-yaml")
				case code != 0:
					t.Errorf("%s: exit %d\n%s", format, code, stderr)
				case format == "nomad-json":
					var doc struct {
						Job struct{ Meta map[string]string }
					}
					if err := json.Unmarshal([]byte(stdout), &doc); err != nil {
						t.Fatalf("nomad-json is not JSON: %v\n%s", err, stdout)
					}
					uri := doc.Job.Meta[nomad.MetaPackageURI]
					if !strings.HasPrefix(uri, "http://"+addr+"/packages/wordcount-") || !strings.HasSuffix(uri, ".tar.gz") {
						t.Errorf("the job names package URI %q, not the one the http uploader would produce", uri)
					}
					if sha := doc.Job.Meta[nomad.MetaPackageSHA256]; len(sha) != 64 || !strings.Contains(uri, sha[:12]) {
						t.Errorf("package sha256 %q does not match the URI %q", sha, uri)
					}
				case format == "kubernetes-yaml":
					if !strings.Contains(stdout, "kind: StatefulSet") || !strings.Contains(stdout, "egret.io/package-uri: http://"+addr+"/packages/wordcount-") {
						t.Errorf("kubernetes-yaml does not show the StatefulSet with the package URI the http uploader would produce:\n%s", stdout)
					}
				case !strings.Contains(stdout, "count"):
					t.Errorf("%s: the plan does not show the count bolt:\n%s", format, stdout)
				}
				sameTree(t, "a dry run ("+format+") in EGRET_HOME", before, treeDigest(t, c.home))
				if left, _ := os.ReadDir(tmp); len(left) > 0 {
					t.Errorf("a dry run (%s) left %d files in the temporary directory: %v", format, len(left), left[0].Name())
				}
			}
			if n := srv.count.Load(); n != 0 {
				t.Errorf("dry runs contacted a server %d times", n)
			}

			// A format the cluster cannot render is refused before the
			// topology binary runs.
			_, stderr, code := c.egret("submit", c.name, wc, "--dry-run", "--dry-run-format", "yaml")
			oneLineError(t, "unknown --dry-run-format", stderr, code, 2, `"yaml"`, "use table, json or the "+sched+" scheduler's own job")
			_, stderr, code = c.egret("submit", c.name, wc, "--dry-run-format", "json")
			oneLineError(t, "--dry-run-format without --dry-run", stderr, code, 2, "--dry-run-format needs --dry-run")
		})
	}
}

// lastLineError checks a failed command whose progress lines (a dry run
// prints them on stderr) precede the error: the exit code, and one error
// line, the last, that names the problem.
func lastLineError(t *testing.T, what string, stderr string, code, wantCode int, mentions ...string) {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(stderr), "\n")
	last := lines[len(lines)-1]
	oneLineError(t, what, last, code, wantCode, mentions...)
	if !strings.HasPrefix(last, "egret: ") {
		t.Errorf("%s: the last line on stderr is not the error:\n%s", what, stderr)
	}
	for _, l := range lines[:len(lines)-1] {
		if strings.HasPrefix(l, "egret:") || strings.HasPrefix(l, "goroutine ") {
			t.Errorf("%s: more than the error line:\n%s", what, stderr)
		}
	}
}
