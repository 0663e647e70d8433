package e2e

import (
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/egret-stream/egret/tracker/trackertest"
)

// TestShellBoltTracebacks: a Python (pystorm) split bolt that raises a
// ValueError at every sentence holding "moon" (pystorm sends the traceback
// with the error command), and then one that fails to import a module when
// it initializes (uncaught: Python writes the traceback to stderr and
// exits): in both cases the tracker shows one exception
// group for the split bolt whose message is the Python exception and
// whose text is the whole traceback, not a "closed its stdout" alone,
// and the instance's log holds the traceback as one entry, not a line
// per frame.
func TestShellBoltTracebacks(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: runs Python subprocesses in a local topology")
	}
	doc, err := trackertest.Load()
	if err != nil {
		t.Fatal(err)
	}
	c := newCluster(t, "local")
	py := pythonBin(t)
	res := filepath.Join(repoRoot(), "test", "e2e", "testdata", "pysplit", "resources")
	base := startTracker(t, c)
	for _, tc := range []struct{ fail, message string }{
		{"moon", `subprocess of split: ValueError: cannot split a sentence with 'moon'`},
		{"import", `ModuleNotFoundError: No module named 'egret_no_such_module'`}, // uncaught: a traceback on stderr
	} {
		t.Run(tc.fail, func(t *testing.T) {
			c.mustEgret("submit", "--resources", res, c.name, binary(t, "pysplit"), "--", "--rate", "20", "--python-path", py, "--fail", tc.fail)
			t.Cleanup(func() { c.egret("kill", c.name, "pysplit", "--ignore-not-found") })
			q := url.Values{"cluster": {c.name}, "topology": {"pysplit"}, "component": {"split"}}
			var sum struct {
				Summary []struct {
					Component, Message string
					Count              int
					LastStack          string `json:"last_stack"`
				}
			}
			await(t, "the split bolt's exception with its traceback", trackerTimeout, func() (bool, string) {
				if code := checked(t, doc, base, "/topologies/exceptionsummary", q, &sum); code != 200 {
					return false, "status " + strconv.Itoa(code)
				}
				var msgs []string
				for _, s := range sum.Summary {
					msgs = append(msgs, s.Message)
					if strings.Contains(s.Message, tc.message) && strings.HasPrefix(s.LastStack, "Traceback (most recent call last):") &&
						strings.Contains(s.LastStack, "split.py") {
						return true, s.Message
					}
				}
				return false, strings.Join(msgs, " | ")
			})
			for _, s := range sum.Summary {
				if strings.HasPrefix(strings.TrimSpace(s.Message), "File \"") {
					t.Errorf("a traceback frame reported as an exception of its own: %q", s.Message)
				}
			}
			// The log: the traceback is one entry.
			var comp struct {
				Tasks []struct{ Task, Container int }
			}
			checked(t, doc, base, "/topologies/component", q, &comp)
			task := comp.Tasks[0]
			var logs struct {
				Lines []struct{ Msg, Text string }
			}
			lq := url.Values{"cluster": {c.name}, "topology": {"pysplit"}, "container": {strconv.Itoa(task.Container)},
				"path": {"instance-split-" + strconv.Itoa(task.Task) + ".log"}, "offset": {"0"}, "length": {"1048576"}}
			await(t, "the traceback as one log entry", trackerTimeout, func() (bool, string) {
				checked(t, doc, base, "/topologies/logs", lq, &logs)
				frames, whole := 0, 0
				for _, l := range logs.Lines {
					if l.Msg == "subprocess stderr" && strings.Contains(l.Text, `File "`) {
						frames++
					}
					if strings.Contains(l.Text, "Traceback (most recent call last):") && strings.Contains(l.Text, "split.py") {
						whole++
					}
				}
				return whole > 0 && frames == 0, "whole tracebacks " + strconv.Itoa(whole) + ", frames logged alone " + strconv.Itoa(frames)
			})
			c.mustEgret("kill", c.name, "pysplit")
			c.waitGone(t)
		})
	}
}
