package launcher

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/egret-stream/egret/core/spi"
)

func TestBundleEgret(t *testing.T) {
	egret := filepath.Join(t.TempDir(), "egret")
	if err := os.WriteFile(egret, []byte("#!/bin/true\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(t.TempDir(), "egret-link")
	if err := os.Symlink(egret, link); err != nil {
		t.Fatal(err)
	}
	here := spi.Config{"egret.package.goos": runtime.GOOS, "egret.package.goarch": runtime.GOARCH}
	with := func(kv ...string) spi.Config {
		c := here.Clone()
		for i := 0; i+1 < len(kv); i += 2 {
			c[kv[i]] = kv[i+1]
		}
		return c
	}
	for _, tc := range []struct {
		name string
		cfg  spi.Config
		want string // the bundled file, "" for none
	}{
		{"not asked for (the local cluster)", here, ""},
		{"off", with("egret.package.core.bundle", "false"), ""},
		{"on: this egret, symlinks resolved", with("egret.package.core.bundle", "true"), egret},
		{"on, but the containers download egret", with("egret.package.core.bundle", "true", "egret.package.core.uri", "https://dl.example.com/egret"), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := &Launcher{Egret: link}
			files := map[string]string{PackageBinary: "/tmp/topology"}
			if err := l.bundleEgret(tc.cfg, files); err != nil {
				t.Fatal(err)
			}
			if got := files[PackageEgret]; got != tc.want {
				t.Errorf("bundled egret %q, want %q", got, tc.want)
			}
			if files[PackageBinary] != "/tmp/topology" || len(files) > 2 {
				t.Errorf("other files changed: %v", files)
			}
		})
	}

	t.Run("another OS or architecture", func(t *testing.T) {
		other := "arm64"
		if runtime.GOARCH == "arm64" {
			other = "amd64"
		}
		files := map[string]string{}
		err := (&Launcher{Egret: egret}).bundleEgret(with("egret.package.core.bundle", "true", "egret.package.goarch", other), files)
		if err == nil || !IsBadInput(err) || !strings.Contains(err.Error(), "egret.package.core.uri") || !strings.Contains(err.Error(), "/"+other) {
			t.Fatalf("error %v: want bad input naming %s and egret.package.core.uri", err, other)
		}
		if len(files) != 0 {
			t.Errorf("files %v after the error", files)
		}
	})
	t.Run("not a bool", func(t *testing.T) {
		err := (&Launcher{Egret: egret}).bundleEgret(with("egret.package.core.bundle", "maybe"), map[string]string{})
		if err == nil || !IsBadInput(err) {
			t.Fatalf("error %v, want bad input", err)
		}
	})
}
