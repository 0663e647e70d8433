package multilang_test

import (
	"context"
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/egret-stream/egret/multilang"
)

// TestPythonTraceback runs a real Python bolt that raises a chained
// exception at its first tuple: the traceback on its stderr becomes one
// log entry and one Traceback (message: the last exception line; text:
// the whole chain), the other stderr line stays a line of its own, and
// LastTraceback holds it once the process is done.
func TestPythonTraceback(t *testing.T) {
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Fatal("python3 is not installed; the multilang tests need it (apt-get install python3)")
	}
	var mu sync.Mutex
	var got []multilang.Traceback
	p, logs := start(t, "", func(c *multilang.Config) {
		c.Command, c.Args, c.Env = python, []string{filepath.Join("testdata", "raise.py")}, nil
		c.Dir = "."
		c.OnTraceback = func(tb multilang.Traceback) {
			mu.Lock()
			got = append(got, tb)
			mu.Unlock()
		}
	})
	p.Out() <- tuple(t, "1", "not a number")
	select {
	case <-p.Done():
	case <-time.After(time.Minute):
		t.Fatal("the raising subprocess did not end within a minute")
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 1 {
		t.Fatalf("%d tracebacks, want 1: %+v", len(got), got)
	}
	tb := got[0]
	if tb.Message != `RuntimeError: cannot split 'not a number'` {
		t.Errorf("message %q", tb.Message)
	}
	for _, want := range []string{"Traceback (most recent call last):", `ValueError: invalid literal for int() with base 10: 'not a number'`,
		"The above exception was the direct cause of the following exception:", `raise RuntimeError("cannot split "`, "RuntimeError: cannot split"} {
		if !strings.Contains(tb.Text, want) {
			t.Errorf("traceback lacks %q:\n%s", want, tb.Text)
		}
	}
	if last := p.LastTraceback(); last == nil || last.Text != tb.Text {
		t.Errorf("LastTraceback = %+v", last)
	}
	entries := logs.FilterMessage("subprocess traceback").All()
	if len(entries) != 1 || entries[0].ContextMap()["exception"] != tb.Message {
		t.Errorf("log entries of the traceback: %+v", entries)
	}
	var lines []string
	for _, e := range logs.FilterMessage("subprocess stderr").All() {
		lines = append(lines, e.ContextMap()["line"].(string))
	}
	if strings.Join(lines, "|") != "a line before the traceback" {
		t.Errorf("stderr lines logged one by one: %q", lines)
	}
}

// TestTracebackBounds: a traceback longer than the bounds keeps its start
// and its exception line.
func TestTracebackBounds(t *testing.T) {
	var b strings.Builder
	b.WriteString("Traceback (most recent call last):\n")
	for range 1000 {
		b.WriteString("  File \"deep.py\", line 1, in f\n    f()\n")
	}
	b.WriteString("RecursionError: maximum recursion depth exceeded\n")
	tb := multilang.AssembleTracebacks(b.String())
	if len(tb) != 1 || tb[0].Message != "RecursionError: maximum recursion depth exceeded" || strings.Count(tb[0].Text, "\n") > 402 ||
		!strings.Contains(tb[0].Text, "[...]") {
		t.Errorf("%d tracebacks: %.200q", len(tb), tb)
	}
}

// TestPythonTracebackBeforeTheHandshake: a Python subprocess that fails
// at import, before it answers the handshake: Start's error says what it
// raised and carries the traceback (StackTrace), not only that it closed
// its stdout.
func TestPythonTracebackBeforeTheHandshake(t *testing.T) {
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Fatal("python3 is not installed; the multilang tests need it (apt-get install python3)")
	}
	_, err = multilang.Start(context.Background(), multilang.Config{Command: python, Args: []string{"-c", "import egret_no_such_module"},
		PidDir: t.TempDir(), StartTimeout: time.Minute, Logger: zap.NewNop()})
	var tbe *multilang.TracebackError
	if !errors.As(err, &tbe) {
		t.Fatalf("Start = %v, want a TracebackError", err)
	}
	if !strings.Contains(err.Error(), "closed its stdout before answering") ||
		!strings.HasSuffix(err.Error(), "it raised ModuleNotFoundError: No module named 'egret_no_such_module'") {
		t.Errorf("error %q", err)
	}
	if st := tbe.StackTrace(); !strings.HasPrefix(st, "Traceback (most recent call last):") || !strings.Contains(st, `File "<string>", line 1`) {
		t.Errorf("stack %q", st)
	}
}
