package spitest

import (
	"context"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
	"sync"
	"time"
)

// Status is the outcome of a check.
type Status string

// The outcomes of a check.
const (
	Pass Status = "PASS"
	Fail Status = "FAIL"
	Skip Status = "SKIP"
)

// Result is the outcome of one check a Reporter ran.
type Result struct {
	// Name is the check's full name, parents first, joined by "/".
	Name   string
	Status Status
	// Reason is the first error (or the skip message) of the check, on one
	// line; empty for a pass.
	Reason  string
	Elapsed time.Duration
	// Leaf is false for a check that ran checks of its own.
	Leaf bool
}

// Options configure a Reporter.
type Options struct {
	// CheckTimeout bounds each check (default 5 minutes). A check that
	// runs longer fails, and the checks after it are not run: its
	// goroutine may still be blocked in the backend.
	CheckTimeout time.Duration
	// Verbose prints the checks' logs (t.Logf) too.
	Verbose bool
	// MaxReason cuts reasons longer than this many bytes (default 400).
	MaxReason int
}

// Reporter runs conformance checks outside go test and prints one line per
// check: "PASS name (time)", "FAIL name: reason" or "SKIP name: reason".
// A Reporter is safe for use by concurrent checks.
type Reporter struct {
	out  io.Writer
	opts Options

	mu      sync.Mutex
	results []Result
	// aborted is set when a check timed out: later checks are skipped.
	aborted string
}

// NewReporter returns a Reporter that prints to out.
func NewReporter(out io.Writer, opts Options) *Reporter {
	if opts.CheckTimeout <= 0 {
		opts.CheckTimeout = 5 * time.Minute
	}
	if opts.MaxReason <= 0 {
		opts.MaxReason = 400
	}
	return &Reporter{out: out, opts: opts}
}

// Run runs f as the check name (f may start checks of its own with
// spitest.Run) and reports whether it and every check under it passed or
// were skipped. ctx is the parent of every check's Context.
func (r *Reporter) Run(ctx context.Context, name string, f func(T)) bool {
	return r.run(ctx, name, f)
}

// Results returns the results so far, in the order the checks ended.
func (r *Reporter) Results() []Result {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Result(nil), r.results...)
}

// Counts returns how many checks passed, failed and were skipped. A check
// that ran checks of its own counts only when it failed by itself.
func (r *Reporter) Counts() (pass, fail, skip int) {
	for _, res := range r.Results() {
		switch {
		case res.Status == Fail:
			fail++
		case !res.Leaf:
		case res.Status == Pass:
			pass++
		case res.Status == Skip:
			skip++
		}
	}
	return pass, fail, skip
}

// Failed reports whether a check failed.
func (r *Reporter) Failed() bool {
	_, fail, _ := r.Counts()
	return fail > 0
}

func (r *Reporter) record(res Result) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.results = append(r.results, res)
	// A passing or skipped parent adds nothing to its children's lines.
	if !res.Leaf && res.Status != Fail {
		return
	}
	switch res.Status {
	case Pass:
		fmt.Fprintf(r.out, "PASS %s (%s)\n", res.Name, res.Elapsed.Round(time.Millisecond))
	default:
		fmt.Fprintf(r.out, "%s %s: %s\n", res.Status, res.Name, res.Reason)
	}
}

func (r *Reporter) logf(name, msg string) {
	if !r.opts.Verbose {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, line := range strings.Split(strings.TrimRight(msg, "\n"), "\n") {
		fmt.Fprintf(r.out, "     %s: %s\n", name, line)
	}
}

func (r *Reporter) run(parent context.Context, name string, f func(T)) bool {
	r.mu.Lock()
	aborted := r.aborted
	r.mu.Unlock()
	if aborted != "" {
		r.record(Result{Name: name, Status: Skip, Reason: "not run: " + aborted, Leaf: true})
		return false
	}
	ctx, cancel := context.WithCancel(parent)
	c := &check{r: r, name: name, ctx: ctx, cancel: cancel}
	start := time.Now()
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer c.finish()
		f(c)
	}()
	timer := time.NewTimer(r.opts.CheckTimeout)
	defer timer.Stop()
wait:
	select {
	case <-done:
	case <-timer.C:
		// The time a check spends in its own checks is theirs.
		c.mu.Lock()
		busy := c.running > 0 || time.Since(c.lastChild) < r.opts.CheckTimeout
		c.mu.Unlock()
		if busy {
			timer.Reset(r.opts.CheckTimeout / 10)
			goto wait
		}
		cancel()
		msg := fmt.Sprintf("check %s did not finish within %s (does the backend hang?)", name, r.opts.CheckTimeout)
		r.mu.Lock()
		if r.aborted == "" {
			r.aborted = msg
		}
		r.mu.Unlock()
		r.record(Result{Name: name, Status: Fail, Reason: msg, Elapsed: time.Since(start), Leaf: true})
		return false
	case <-parent.Done():
		cancel()
		msg := fmt.Sprintf("interrupted: %v", context.Cause(parent))
		r.mu.Lock()
		if r.aborted == "" {
			r.aborted = msg
		}
		r.mu.Unlock()
		r.record(Result{Name: name, Status: Fail, Reason: msg, Elapsed: time.Since(start), Leaf: true})
		return false
	}
	c.mu.Lock()
	res := Result{Name: name, Elapsed: time.Since(start), Leaf: c.children == 0, Reason: c.reason}
	switch {
	case c.failed:
		res.Status = Fail
		if res.Reason == "" {
			res.Reason = "failed"
		}
	case c.skipped:
		res.Status = Skip
	default:
		res.Status = Pass
		res.Reason = ""
	}
	childFailed := c.childFailed
	c.mu.Unlock()
	r.record(res)
	return res.Status != Fail && !childFailed
}

// check is the T of one check a Reporter runs.
type check struct {
	r      *Reporter
	name   string
	ctx    context.Context
	cancel context.CancelFunc

	mu        sync.Mutex
	failed    bool
	skipped   bool
	reason    string
	ownReason string
	cleanups  []func()
	children  int
	// running counts the checks under this one that run now; lastChild is
	// when the last one ended.
	running   int
	lastChild time.Time
	// childFailed is set when a check under this one failed.
	childFailed bool
}

func (c *check) oneLine(msg string) string {
	msg = strings.Join(strings.Fields(msg), " ")
	if len(msg) > c.r.opts.MaxReason {
		msg = msg[:c.r.opts.MaxReason] + "..."
	}
	return msg
}

func (c *check) fail(msg string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.failed = true
	if c.ownReason == "" && msg != "" {
		c.ownReason = c.oneLine(msg)
		c.reason = c.ownReason
	}
}

// finish runs the cleanups, last registered first, and turns a panic of
// the check into a failure.
func (c *check) finish() {
	if p := recover(); p != nil {
		c.fail(fmt.Sprintf("panic: %v", p))
	}
	c.cancel()
	for {
		c.mu.Lock()
		if len(c.cleanups) == 0 {
			c.mu.Unlock()
			return
		}
		f := c.cleanups[len(c.cleanups)-1]
		c.cleanups = c.cleanups[:len(c.cleanups)-1]
		c.mu.Unlock()
		// A cleanup may call Fatal (runtime.Goexit): give it a goroutine.
		done := make(chan struct{})
		go func() {
			defer close(done)
			defer func() {
				if p := recover(); p != nil {
					c.fail(fmt.Sprintf("cleanup panic: %v", p))
				}
			}()
			f()
		}()
		<-done
	}
}

func (c *check) Helper()      {}
func (c *check) Name() string { return c.name }

func (c *check) Log(args ...any) { c.r.logf(c.name, fmt.Sprintln(args...)) }
func (c *check) Logf(format string, args ...any) {
	c.r.logf(c.name, fmt.Sprintf(format, args...))
}

func (c *check) Error(args ...any) { c.fail(fmt.Sprintln(args...)) }
func (c *check) Errorf(format string, args ...any) {
	c.fail(fmt.Sprintf(format, args...))
}

func (c *check) Fatal(args ...any) {
	c.fail(fmt.Sprintln(args...))
	runtime.Goexit()
}

func (c *check) Fatalf(format string, args ...any) {
	c.fail(fmt.Sprintf(format, args...))
	runtime.Goexit()
}

func (c *check) Fail() { c.fail("") }

func (c *check) FailNow() {
	c.fail("")
	runtime.Goexit()
}

func (c *check) Failed() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.failed || c.childFailed
}

func (c *check) skip(msg string) {
	c.mu.Lock()
	c.skipped = true
	if c.reason == "" {
		c.reason = c.oneLine(msg)
	}
	c.mu.Unlock()
	runtime.Goexit()
}

func (c *check) Skip(args ...any)                 { c.skip(fmt.Sprintln(args...)) }
func (c *check) Skipf(format string, args ...any) { c.skip(fmt.Sprintf(format, args...)) }
func (c *check) SkipNow()                         { c.skip("skipped") }

func (c *check) Cleanup(f func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.cleanups = append(c.cleanups, f)
}

func (c *check) Context() context.Context { return c.ctx }

func (c *check) TempDir() string {
	dir, err := os.MkdirTemp("", "egret-verify-")
	if err != nil {
		c.Fatalf("TempDir: %v", err)
	}
	c.Cleanup(func() { _ = os.RemoveAll(dir) })
	return dir
}

// RunCheck runs f as a check under c (spitest.Run).
func (c *check) RunCheck(name string, f func(T)) bool {
	c.mu.Lock()
	c.children++
	c.running++
	c.mu.Unlock()
	ok := c.r.run(c.ctx, c.name+"/"+name, f)
	c.mu.Lock()
	c.running--
	c.lastChild = time.Now()
	if !ok {
		c.childFailed = true
	}
	c.mu.Unlock()
	return ok
}
