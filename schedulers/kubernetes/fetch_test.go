package kubernetes

import (
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/egret-stream/egret/internal/fetch"
)

// toolbox returns a PATH holding sh, wget, sha256sum and tar: busybox's
// applets when busybox is installed (what the default init image runs),
// else the machine's own tools; it skips the test when neither is there.
func toolbox(t *testing.T) (sh string, path string) {
	t.Helper()
	if bb, err := exec.LookPath("busybox"); err == nil {
		dir := t.TempDir()
		for _, tool := range []string{"sh", "wget", "sha256sum", "tar", "mkdir", "rm", "chmod", "gzip"} {
			if err := os.Symlink(bb, filepath.Join(dir, tool)); err != nil {
				t.Fatal(err)
			}
		}
		return filepath.Join(dir, "sh"), dir
	}
	for _, tool := range []string{"sh", "wget", "sha256sum", "tar"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("neither busybox nor %s is installed (apt-get install busybox)", tool)
		}
	}
	t.Log("busybox is not installed: running the init script with the machine's sh, wget, sha256sum and tar")
	sh, _ = exec.LookPath("sh")
	return sh, os.Getenv("PATH")
}

// TestFetchScript runs the init container's script for real (with busybox
// when installed) against a local package server.
func TestFetchScript(t *testing.T) {
	sh, path := toolbox(t)
	src := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(src, name)
		if err := os.WriteFile(p, []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	pkgSHA, err := fetch.CreateTarGz(filepath.Join(src, "pkg.tar.gz"), map[string]string{
		"topology": write("topology", "#!/bin/sh\n"), "cluster.json": write("cluster.json", "{}"), "egret": write("egret-bundled", "bundled"),
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fetch.CreateTarGz(filepath.Join(src, "core.tar.gz"), map[string]string{"egret": write("egret-core", "core")}); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.FileServer(http.Dir(src)))
	t.Cleanup(srv.Close)

	run := func(t *testing.T, env ...string) (string, string, error) {
		root := t.TempDir()
		script := strings.Replace(fetchScript, "R=/egret\n", "R="+root+"\n", 1)
		cmd := exec.Command(sh, "-c", script)
		cmd.Env = append([]string{"PATH=" + path}, env...)
		out, err := cmd.CombinedOutput()
		return root, string(out), err
	}
	t.Run("bundled", func(t *testing.T) {
		root, out, err := run(t, "EGRET_PACKAGE_URI="+srv.URL+"/pkg.tar.gz", "EGRET_PACKAGE_SHA256="+pkgSHA)
		if err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		for _, f := range []string{"work/package/topology", "work/package/cluster.json", "work/package/egret"} {
			if _, err := os.Stat(filepath.Join(root, f)); err != nil {
				t.Errorf("%s: %v", f, err)
			}
		}
		if _, err := os.Stat(filepath.Join(root, "package.tar.gz")); err == nil {
			t.Error("the download was not removed")
		}
	})
	t.Run("core archive", func(t *testing.T) {
		root, out, err := run(t, "EGRET_PACKAGE_URI="+srv.URL+"/pkg.tar.gz", "EGRET_CORE_URI="+srv.URL+"/core.tar.gz")
		if err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		if b, err := os.ReadFile(filepath.Join(root, "bin/egret")); err != nil || string(b) != "core" {
			t.Errorf("bin/egret: %q, %v", b, err)
		}
	})
	t.Run("core binary", func(t *testing.T) {
		root, out, err := run(t, "EGRET_PACKAGE_URI="+srv.URL+"/pkg.tar.gz", "EGRET_CORE_URI="+srv.URL+"/egret-core")
		if err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		st, err := os.Stat(filepath.Join(root, "bin/egret"))
		if err != nil || st.Mode()&0o111 == 0 {
			t.Errorf("bin/egret is not an executable: %v %v", st, err)
		}
	})
	t.Run("wrong digest", func(t *testing.T) {
		root, out, err := run(t, "EGRET_PACKAGE_URI="+srv.URL+"/pkg.tar.gz", "EGRET_PACKAGE_SHA256="+strings.Repeat("0", 64))
		if err == nil {
			t.Fatalf("a package with the wrong digest was accepted:\n%s", out)
		}
		if _, err := os.Stat(filepath.Join(root, "work/package/topology")); err == nil {
			t.Error("a package with the wrong digest was extracted")
		}
	})
	t.Run("missing package", func(t *testing.T) {
		if _, out, err := run(t, "EGRET_PACKAGE_URI="+srv.URL+"/nope.tar.gz"); err == nil {
			t.Fatalf("a missing package did not fail the init container:\n%s", out)
		}
	})
}
