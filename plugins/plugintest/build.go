package plugintest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// builds caches the binaries built in this test process.
var builds struct {
	mu     sync.Mutex
	dir    string // set by Main; "" means no caching
	byPkg  map[string]*build
	inMain bool
}

type build struct {
	once sync.Once
	path string
	err  error
}

// Main runs the tests of a package (call it from TestMain) and removes the
// binaries Build made once the tests end. Without Main, Build builds again
// for every test. The packages in prebuild are built concurrently before
// the tests start (a build error is reported by the first Build of the
// package).
func Main(m *testing.M, prebuild ...string) {
	os.Exit(Run(m, prebuild...))
}

// Run is Main returning the exit code instead of exiting, for a TestMain
// that has more to stop after the tests.
func Run(m *testing.M, prebuild ...string) int {
	dir, err := os.MkdirTemp("", "egret-plugintest-")
	if err != nil {
		fmt.Fprintf(os.Stderr, "plugintest: %v\n", err)
		return 2
	}
	builds.mu.Lock()
	builds.dir, builds.byPkg, builds.inMain = dir, map[string]*build{}, true
	builds.mu.Unlock()
	var wg sync.WaitGroup
	for _, pkg := range prebuild {
		wg.Add(1)
		go func() {
			defer wg.Done()
			entry(pkg).do(pkg)
		}()
	}
	wg.Wait()
	code := m.Run()
	_ = os.RemoveAll(dir)
	return code
}

// Build builds the main package pkg (as `go build` takes it: "./testdata/x"
// relative to the test's package directory, or an import path) and returns
// the binary's path. Under Main the binary is built once per test process.
func Build(t testing.TB, pkg string) string {
	t.Helper()
	builds.mu.Lock()
	if !builds.inMain {
		builds.mu.Unlock()
		path, err := goBuild(t.TempDir(), pkg)
		if err != nil {
			t.Fatal(err)
		}
		return path
	}
	builds.mu.Unlock()
	b := entry(pkg)
	b.do(pkg)
	if b.err != nil {
		t.Fatal(b.err)
	}
	return b.path
}

// entry returns the cache entry of pkg.
func entry(pkg string) *build {
	builds.mu.Lock()
	defer builds.mu.Unlock()
	b := builds.byPkg[pkg]
	if b == nil {
		b = &build{}
		builds.byPkg[pkg] = b
	}
	return b
}

// do builds pkg once.
func (b *build) do(pkg string) {
	b.once.Do(func() {
		sub, err := os.MkdirTemp(builds.dir, "bin-")
		if err != nil {
			b.err = err
			return
		}
		b.path, b.err = goBuild(sub, pkg)
	})
}

func goBuild(dir, pkg string) (string, error) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		return "", fmt.Errorf("plugintest: build %s: the go command is not on PATH: %w", pkg, err)
	}
	name := filepath.Base(strings.TrimSuffix(pkg, "/"))
	if name == "." || name == "" {
		name = "plugin"
	}
	out := filepath.Join(dir, name)
	cmd := exec.Command(goBin, "build", "-o", out, pkg)
	if msg, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("plugintest: go build %s: %w\n%s", pkg, err, msg)
	}
	return out, nil
}

// Install makes binary available in dir as the plugin of kind and name
// (egret-<kind>-<name>, a symbolic link) and returns its path.
func Install(t testing.TB, dir, kind, name, binary string) string {
	t.Helper()
	dst := filepath.Join(dir, "egret-"+kind+"-"+name)
	if err := os.Symlink(binary, dst); err != nil {
		t.Fatalf("plugintest: install %s: %v", dst, err)
	}
	return dst
}
