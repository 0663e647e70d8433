package api

import (
	"errors"
	"strings"
	"testing"
)

// TestSubprocessErrorTraceback: pystorm's error command carries the
// formatted exception; the reported error's message is its last line and
// its stack the traceback, so that it groups with the same traceback seen
// on stderr. Other messages stay as they are.
func TestSubprocessErrorTraceback(t *testing.T) {
	msg := "Python ValueError raised while processing Tuple Tuple(id='1')\nTraceback (most recent call last):\n  File \"split.py\", line 20, in process\n    raise ValueError(\"bad\")\nValueError: bad\n"
	err := subprocessError("split", 3, msg)
	var se *StackError
	if !errors.As(err, &se) || se.Message != "subprocess of split: ValueError: bad" ||
		!strings.HasPrefix(se.Stack, "Traceback (most recent call last):") || !strings.HasSuffix(se.Stack, "ValueError: bad") {
		t.Errorf("%#v", err)
	}
	if err := subprocessError("split", 3, "plain"); err.Error() != "subprocess of split/3: plain" {
		t.Errorf("plain: %v", err)
	}
}
