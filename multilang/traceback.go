package multilang

import (
	"fmt"
	"strings"
)

// A Python subprocess that raises writes its traceback to stderr, one
// line at a time:
//
//	Traceback (most recent call last):
//	  File "split.py", line 9, in process
//	    raise ValueError("bad sentence")
//	ValueError: bad sentence
//
// tracebacks assembles those lines into one text, so that the log holds
// one entry and the operator sees one exception instead of a line per
// frame. Chained exceptions ("During handling of the above exception,
// another exception occurred:") make one text too: the assembler ends a
// traceback at its exception line and keeps going when the next line
// continues the chain.

// Bounds of one assembled traceback.
const (
	maxTracebackLines = 400
	maxTracebackBytes = 64 << 10
)

const tracebackStart = "Traceback (most recent call last):"

// Traceback is one assembled traceback: Message is its last line (the
// exception, "ValueError: bad sentence"), Text all of it.
type Traceback struct {
	Message string
	Text    string
}

// tracebacks is the assembler; lines are fed one by one.
type tracebacks struct {
	lines []string
	size  int
	// ended: the exception line was read; a chain may continue.
	ended bool
}

// chainLine tells the lines that continue a chain after an exception
// line.
func chainLine(l string) bool {
	return l == "" || strings.HasPrefix(l, "During handling of the above exception") ||
		strings.HasPrefix(l, "The above exception was the direct cause") || l == tracebackStart
}

// feed takes one line of stderr. It returns a traceback that is complete
// (or nil), and whether the line belongs to a traceback (false: log it
// as a line of its own).
func (t *tracebacks) feed(line string) (done *Traceback, taken bool) {
	if t.lines == nil {
		if line != tracebackStart {
			return nil, false
		}
		t.add(line)
		return nil, true
	}
	if t.ended {
		if !chainLine(line) {
			done = t.flush()
			if line == tracebackStart {
				t.add(line)
				return done, true
			}
			return done, false
		}
		t.ended = false
		t.add(line)
		return nil, true
	}
	if line != "" && line[0] != ' ' && line[0] != '\t' && !chainLine(line) {
		// The exception line ends this traceback; a chain may follow.
		t.ended = true
		t.lines = append(t.lines, line) // kept whatever the bounds
		t.size += len(line) + 1
		return nil, true
	}
	t.add(line)
	return nil, true
}

// add keeps a line within the bounds, and marks where lines were cut.
func (t *tracebacks) add(line string) {
	switch {
	case len(t.lines) < maxTracebackLines && t.size+len(line) < maxTracebackBytes:
		t.lines = append(t.lines, line)
		t.size += len(line) + 1
	case t.lines[len(t.lines)-1] != cut:
		t.lines = append(t.lines, cut)
	}
}

// cut marks the lines left out of a long traceback.
const cut = "[...]"

// flush returns what was assembled (nil when nothing) and resets.
func (t *tracebacks) flush() *Traceback {
	if t.lines == nil {
		return nil
	}
	lines := t.lines
	t.lines, t.size, t.ended = nil, 0, false
	msg := ""
	for i := len(lines) - 1; i >= 0; i-- {
		if l := strings.TrimSpace(lines[i]); l != "" && l != cut {
			msg = l
			break
		}
	}
	return &Traceback{Message: msg, Text: strings.Join(lines, "\n")}
}

// pending tells whether an exception line was read (the traceback is
// complete unless a chain follows).
func (t *tracebacks) pending() bool { return t.ended }

// AssembleTracebacks returns the tracebacks in text (lines of a stderr),
// as the process assembles them.
func AssembleTracebacks(text string) []Traceback {
	var t tracebacks
	var out []Traceback
	for _, l := range strings.Split(strings.TrimSuffix(text, "\n"), "\n") {
		if done, _ := t.feed(l); done != nil {
			out = append(out, *done)
		}
	}
	if done := t.flush(); done != nil {
		out = append(out, *done)
	}
	return out
}

// TracebackError is an error of a subprocess that wrote a traceback: its
// message adds the exception, StackTrace returns the traceback (the
// runtime reports it as the exception's stack).
type TracebackError struct {
	Err       error
	Traceback Traceback
}

func (e *TracebackError) Error() string {
	return fmt.Sprintf("%v; it raised %s", e.Err, e.Traceback.Message)
}

func (e *TracebackError) Unwrap() error { return e.Err }

// StackTrace returns the traceback.
func (e *TracebackError) StackTrace() string { return e.Traceback.Text }
