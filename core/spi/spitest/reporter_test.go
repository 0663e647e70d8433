package spitest_test

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/egret-stream/egret/core/spi/spitest"
)

// suite is a small suite written once against spitest.T.
func suite(t spitest.T) {
	var order []string
	t.Cleanup(func() { order = append(order, "root") })
	spitest.Run(t, "pass", func(t spitest.T) {
		t.Cleanup(func() { order = append(order, "pass") })
		t.Logf("a log line")
	})
	spitest.Run(t, "skip", func(t spitest.T) { t.Skipf("not %s", "supported") })
	spitest.Run(t, "nested", func(t spitest.T) {
		spitest.Run(t, "leaf", func(t spitest.T) {})
	})
	if testing.Testing() && spitest.Testing(t) != nil {
		return // the failing checks are for the Reporter only
	}
	spitest.Run(t, "error", func(t spitest.T) {
		t.Errorf("first\nproblem")
		t.Errorf("second problem")
	})
	spitest.Run(t, "fatal", func(t spitest.T) {
		t.Fatal("stop here")
		t.Error("never reached")
	})
	spitest.Run(t, "cleanup-fails", func(t spitest.T) {
		t.Cleanup(func() { t.Fatalf("cleanup broke") })
	})
	spitest.Run(t, "panics", func(t spitest.T) { panic("boom") })
	spitest.Run(t, "tempdir", func(t spitest.T) {
		if t.TempDir() == "" {
			t.Error("no temp dir")
		}
		if t.Context().Err() != nil {
			t.Error("context ended early")
		}
	})
}

func TestUnderGoTest(t *testing.T) {
	suite(t)
	if spitest.Testing(t) != t {
		t.Fatal("Testing does not return the *testing.T")
	}
}

func TestReporter(t *testing.T) {
	var out bytes.Buffer
	r := spitest.NewReporter(&out, spitest.Options{})
	if ok := r.Run(context.Background(), "suite", suite); ok {
		t.Error("Run reported success with failing checks")
	}
	want := []string{
		"PASS suite/pass (",
		"SKIP suite/skip: not supported",
		"PASS suite/nested/leaf (",
		"FAIL suite/error: first problem",
		"FAIL suite/fatal: stop here",
		"FAIL suite/cleanup-fails: cleanup broke",
		"FAIL suite/panics: panic: boom",
		"PASS suite/tempdir (",
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != len(want) {
		t.Fatalf("got %d lines, want %d:\n%s", len(lines), len(want), out.String())
	}
	for i, w := range want {
		if !strings.HasPrefix(lines[i], w) {
			t.Errorf("line %d = %q, want prefix %q", i, lines[i], w)
		}
	}
	if strings.Contains(out.String(), "never reached") || strings.Contains(out.String(), "a log line") {
		t.Errorf("output has what it should not:\n%s", out.String())
	}
	pass, fail, skip := r.Counts()
	if pass != 3 || fail != 4 || skip != 1 {
		t.Errorf("counts = %d passed, %d failed, %d skipped; want 3, 4, 1", pass, fail, skip)
	}
}

func TestReporterVerbose(t *testing.T) {
	var out bytes.Buffer
	r := spitest.NewReporter(&out, spitest.Options{Verbose: true})
	r.Run(context.Background(), "v", func(t spitest.T) { t.Logf("hello %d", 1) })
	if !strings.Contains(out.String(), "v: hello 1") {
		t.Errorf("verbose output lacks the log line:\n%s", out.String())
	}
}

// A check that hangs fails with a reason naming it, and the checks after it
// are not run.
func TestReporterTimeout(t *testing.T) {
	var out bytes.Buffer
	r := spitest.NewReporter(&out, spitest.Options{CheckTimeout: 100 * time.Millisecond})
	release := make(chan struct{})
	defer close(release)
	r.Run(context.Background(), "root", func(t spitest.T) {
		spitest.Run(t, "hangs", func(t spitest.T) { <-release })
		spitest.Run(t, "after", func(t spitest.T) {})
	})
	s := out.String()
	for _, w := range []string{"FAIL root/hangs: check root/hangs did not finish within 100ms", "SKIP root/after: not run: check root/hangs"} {
		if !strings.Contains(s, w) {
			t.Errorf("output lacks %q:\n%s", w, s)
		}
	}
	if !r.Failed() {
		t.Error("Failed() = false after a timeout")
	}
}
