package launcher

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"go.uber.org/zap"

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

// diagScheduler is a scheduler whose Diagnose answers why.
type diagScheduler struct {
	spi.Scheduler
	why string
}

func (d diagScheduler) Diagnose(context.Context, string) (string, error) { return d.why, nil }
func (d diagScheduler) Close() error                                     { return nil }

type schedOnly struct {
	Backends
	s spi.Scheduler
}

func (b schedOnly) Scheduler(context.Context, spi.Config) (spi.Scheduler, error) { return b.s, nil }

func TestExplainWait(t *testing.T) {
	timeout := errors.New(`topology "wordcount" has no physical plan for its packing plan after 1m0s`)
	for _, tc := range []struct {
		name  string
		sched spi.Scheduler
		want  []string
	}{
		{"the scheduler knows why", diagScheduler{why: "container-1 (allocation 0660644f, failed): Driver Failure: binary could not be found"},
			[]string{"no physical plan", "Driver Failure: binary could not be found", "stays submitted (egret kill nomad wordcount removes it)"}},
		{"nothing wrong seen", diagScheduler{}, []string{"no physical plan", "stays submitted"}},
		{"no Diagnoser", struct{ spi.Scheduler }{diagScheduler{}}, []string{"no physical plan", "stays submitted"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := &Launcher{Backends: schedOnly{s: tc.sched}, Log: zap.NewNop()}
			err := l.explainWait(context.Background(), spi.Config{}, "nomad", "wordcount", timeout)
			if !errors.Is(err, timeout) {
				t.Errorf("error %v does not wrap the timeout", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("error %q is not one line", err)
			}
		})
	}
}
