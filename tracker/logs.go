package tracker

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strings"
	"time"
)

// /topologies/logs: a byte range of a container's log file rendered as
// text lines. Every process of a topology writes zap's JSON lines
// (internal/daemonlog); a line is rendered as
//
//	2026-12-07T02:30:00.123Z INFO  logger  message  key=value ...
//
// with a multi-line value (a stack, a traceback) kept as its own lines.
// A line that is not JSON (a crash's output) is shown as it is. The range
// is cut to whole lines; offset and end say which bytes the lines cover,
// so a client pages back from offset and follows from end.

// maxGrep bounds the search string.
const maxGrep = 200

// logLineJSON is one rendered log line.
type logLineJSON struct {
	// Offset of the line in the file.
	Offset int64  `json:"offset"`
	Time   string `json:"time"`
	Level  string `json:"level"`
	Logger string `json:"logger"`
	Msg    string `json:"msg"`
	// Text is the whole line as text.
	Text string `json:"text"`
}

// renderLogLine renders one line of a log file.
func renderLogLine(line []byte) logLineJSON {
	var m map[string]any
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.UseNumber()
	if len(line) == 0 || line[0] != '{' || dec.Decode(&m) != nil {
		return logLineJSON{Text: string(line)}
	}
	l := logLineJSON{}
	if ts, ok := m["ts"].(json.Number); ok {
		if f, err := ts.Float64(); err == nil {
			sec, frac := math.Modf(f)
			l.Time = time.Unix(int64(sec), int64(frac*1e9)).UTC().Format("2006-01-02T15:04:05.000Z")
		}
	}
	l.Level, _ = m["level"].(string)
	l.Logger, _ = m["logger"].(string)
	l.Msg, _ = m["msg"].(string)
	var keys []string
	for k := range m {
		switch k {
		case "ts", "level", "logger", "msg", "caller":
		default:
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	var b strings.Builder
	fmt.Fprintf(&b, "%s %-5s", l.Time, strings.ToUpper(l.Level))
	if l.Logger != "" {
		fmt.Fprintf(&b, " %s", l.Logger)
	}
	fmt.Fprintf(&b, "  %s", l.Msg)
	var long []string
	for _, k := range keys {
		var v string
		switch x := m[k].(type) {
		case string:
			v = x
		case json.Number:
			v = x.String()
		default:
			j, _ := json.Marshal(x)
			v = string(j)
		}
		if strings.Contains(v, "\n") {
			long = append(long, k+":\n"+strings.TrimRight(v, "\n"))
			continue
		}
		if strings.ContainsAny(v, " \t\"") {
			v = fmt.Sprintf("%q", v)
		}
		fmt.Fprintf(&b, " %s=%s", k, v)
	}
	if c, ok := m["caller"].(string); ok && c != "" {
		fmt.Fprintf(&b, " (%s)", c)
	}
	for _, s := range long {
		b.WriteString("\n" + s)
	}
	l.Text = b.String()
	return l
}

// renderLog cuts data (the bytes of the file from offset, of a file of
// size bytes) to whole lines and renders those matching grep
// (case-insensitive; "" matches all). It returns the lines and the byte
// range [from, to) they cover.
func renderLog(data []byte, offset, size int64, grep string) (lines []logLineJSON, from, to int64) {
	from, to = offset, offset+int64(len(data))
	if offset > 0 { // the first line may be cut: start after it
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			return []logLineJSON{}, from, from
		}
		data, from = data[i+1:], from+int64(i+1)
	}
	if to < size || len(data) > 0 && data[len(data)-1] != '\n' {
		// The last line may be cut (or still being written): leave it.
		i := bytes.LastIndexByte(data, '\n')
		if i < 0 {
			return []logLineJSON{}, from, from
		}
		data, to = data[:i+1], from+int64(i+1)
	}
	needle := strings.ToLower(grep)
	lines = []logLineJSON{}
	pos := from
	for len(data) > 0 {
		i := bytes.IndexByte(data, '\n')
		line := data[:i]
		data = data[i+1:]
		l := renderLogLine(bytes.TrimRight(line, "\r"))
		l.Offset = pos
		pos += int64(i + 1)
		if needle != "" && !strings.Contains(strings.ToLower(l.Text), needle) {
			continue
		}
		lines = append(lines, l)
	}
	return lines, from, to
}

func (t *Tracker) logsEP(ctx context.Context, q *query) (any, error) {
	if q.files.offset > 0 {
		// Read the byte before too: renderLog drops the line it cuts, and
		// a range that starts at a line (a follow from end) cuts none.
		q.files.offset--
		q.files.length = min(q.files.length+1, maxFileChunk)
	}
	data, offset, size, err := t.readFile(ctx, q)
	if err != nil {
		return nil, err
	}
	lines, from, to := renderLog(data, offset, size, q.grep)
	return map[string]any{"cluster": q.cluster.name, "topology": q.name, "container": q.files.container, "path": q.files.path,
		"size": size, "offset": from, "end": to, "grep": q.grep, "lines": lines}, nil
}
