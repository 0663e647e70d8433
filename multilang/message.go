package multilang

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
)

// Commands a subprocess sends.
const (
	CmdEmit    = "emit"
	CmdAck     = "ack"
	CmdFail    = "fail"
	CmdSync    = "sync"
	CmdLog     = "log"
	CmdError   = "error"
	CmdMetrics = "metrics"
)

// Commands sent to a spout subprocess; each is answered by a sync.
const (
	CmdNext       = "next"
	CmdActivate   = "activate"
	CmdDeactivate = "deactivate"
)

// Storm's log levels of the log command.
const (
	LevelTrace = 0
	LevelDebug = 1
	LevelInfo  = 2
	LevelWarn  = 3
	LevelError = 4
)

// Names of the heartbeat tuple (Storm's ShellBolt heartbeat).
const (
	SystemComponent = "__system"
	HeartbeatStream = "__heartbeat"
)

// ErrProtocol is wrapped by the errors of a message that does not follow
// the protocol.
var ErrProtocol = errors.New("multilang protocol error")

// ErrTooLarge is wrapped when a message exceeds the reader's limit.
var ErrTooLarge = errors.New("multilang message too large")

// Message is one message from a subprocess.
type Message struct {
	// Command is empty in the handshake reply.
	Command string
	// ID is the "id" field (nil when absent); IDKey is its canonical
	// text (see Key).
	ID    any
	IDKey string
	// Stream is the stream of an emit ("" for the default stream).
	Stream string
	// Task is the direct task of an emit, when HasTask.
	Task    int
	HasTask bool
	// Tuple are the values of an emit.
	Tuple []any
	// Anchors are the keys (see Key) of an emit's anchors.
	Anchors []string
	// NeedTaskIDs: reply to an emit with the task ids (Storm's default,
	// true, when the field is absent).
	NeedTaskIDs bool
	// Msg is the text of a log or error command.
	Msg string
	// Level is the level of a log command (LevelInfo when absent).
	Level int
	// Name and Params are a metrics command's.
	Name   string
	Params any
	// Pid is the handshake reply's process id.
	Pid int
}

// Key returns the canonical text of an id: a string is itself, any
// other value its JSON text. Ids given back to the runtime (acks,
// anchors) are matched by key.
func Key(id any) string {
	if s, ok := id.(string); ok {
		return s
	}
	b, err := AppendValue(nil, id)
	if err != nil {
		return fmt.Sprint(id)
	}
	return string(b)
}

// Decode parses the JSON text of one message from a subprocess and
// checks the fields its command needs.
func Decode(data []byte) (*Message, error) {
	v, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrProtocol, err)
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("%w: want a JSON object, got %s", ErrProtocol, kind(v))
	}
	m := &Message{NeedTaskIDs: true, Level: LevelInfo}
	if c, ok := obj["command"]; ok {
		if m.Command, ok = c.(string); !ok {
			return nil, fmt.Errorf("%w: \"command\" is %s, want a string", ErrProtocol, kind(c))
		}
	}
	if id, ok := obj["id"]; ok && id != nil {
		m.ID, m.IDKey = id, Key(id)
	}
	switch m.Command {
	case "":
		pid, ok := obj["pid"]
		if !ok {
			return nil, fmt.Errorf("%w: a message without \"command\" (only the handshake reply {\"pid\": N} has none)", ErrProtocol)
		}
		n, ok := integer(pid)
		if !ok || n <= 0 || n > math.MaxInt32 {
			return nil, fmt.Errorf("%w: handshake reply \"pid\" is %s, want a positive integer", ErrProtocol, kind(pid))
		}
		m.Pid = int(n)
	case CmdEmit:
		t, ok := obj["tuple"].([]any)
		if !ok {
			return nil, fmt.Errorf("%w: emit without a \"tuple\" array", ErrProtocol)
		}
		m.Tuple = t
		if s, ok := obj["stream"]; ok && s != nil {
			if m.Stream, ok = s.(string); !ok {
				return nil, fmt.Errorf("%w: emit \"stream\" is %s, want a string", ErrProtocol, kind(s))
			}
		}
		if t, ok := obj["task"]; ok && t != nil {
			n, ok := integer(t)
			if !ok || n < 0 || n > math.MaxInt32 {
				return nil, fmt.Errorf("%w: emit \"task\" is %s, want a task id", ErrProtocol, kind(t))
			}
			m.Task, m.HasTask = int(n), true
		}
		if a, ok := obj["anchors"]; ok && a != nil {
			list, ok := a.([]any)
			if !ok {
				return nil, fmt.Errorf("%w: emit \"anchors\" is %s, want an array of tuple ids", ErrProtocol, kind(a))
			}
			m.Anchors = make([]string, len(list))
			for i, x := range list {
				m.Anchors[i] = Key(x)
			}
		}
		if n, ok := obj["need_task_ids"]; ok && n != nil {
			if m.NeedTaskIDs, ok = n.(bool); !ok {
				return nil, fmt.Errorf("%w: emit \"need_task_ids\" is %s, want true or false", ErrProtocol, kind(n))
			}
		}
	case CmdAck, CmdFail:
		if m.ID == nil {
			return nil, fmt.Errorf("%w: %s without an \"id\"", ErrProtocol, m.Command)
		}
	case CmdLog, CmdError:
		if s, ok := obj["msg"]; ok {
			if m.Msg, ok = s.(string); !ok {
				m.Msg = Key(s)
			}
		}
		if l, ok := obj["level"]; ok && l != nil && m.Command == CmdLog {
			n, ok := integer(l)
			if !ok || n < LevelTrace || n > LevelError {
				return nil, fmt.Errorf("%w: log \"level\" is %s, want 0 (trace) to 4 (error)", ErrProtocol, kind(l))
			}
			m.Level = int(n)
		}
	case CmdMetrics:
		name, ok := obj["name"].(string)
		if !ok || name == "" {
			return nil, fmt.Errorf("%w: metrics without a \"name\" string", ErrProtocol)
		}
		m.Name, m.Params = name, obj["params"]
	case CmdSync:
	default:
		return nil, fmt.Errorf("%w: unknown command %q", ErrProtocol, m.Command)
	}
	return m, nil
}

// integer returns an integral JSON number as an int64.
func integer(v any) (int64, bool) {
	switch x := v.(type) {
	case int64:
		return x, true
	case uint64:
		return 0, false
	case float64:
		if x == math.Trunc(x) && math.Abs(x) < 1<<53 {
			return int64(x), true
		}
	}
	return 0, false
}

// kind names the JSON type of a parsed value for errors.
func kind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case int64, uint64, float64:
		return "a number"
	case string:
		return "a string"
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}

// endLine ends every message on the wire.
const endLine = "end"

// AppendFrame appends the framing after a message's JSON text: a newline
// and the line "end".
func AppendFrame(dst []byte) []byte { return append(dst, "\nend\n"...) }

// AppendTuple appends the message that hands a tuple to a bolt
// subprocess, framed.
func AppendTuple(dst []byte, id, comp, stream string, task int, values []any) ([]byte, error) {
	start := len(dst)
	dst = append(dst, `{"id":`...)
	dst = AppendString(dst, id)
	dst = append(dst, `,"comp":`...)
	dst = AppendString(dst, comp)
	dst = append(dst, `,"stream":`...)
	dst = AppendString(dst, stream)
	dst = append(dst, `,"task":`...)
	dst = strconv.AppendInt(dst, int64(task), 10)
	dst = append(dst, `,"tuple":[`...)
	for i, v := range values {
		if i > 0 {
			dst = append(dst, ',')
		}
		var err error
		if dst, err = AppendValue(dst, v); err != nil {
			return dst[:start], fmt.Errorf("tuple value %d: %w", i, err)
		}
	}
	dst = append(dst, "]}"...)
	return AppendFrame(dst), nil
}

// AppendCommand appends a spout command (next, activate, deactivate, or
// ack and fail with the id's JSON text), framed.
func AppendCommand(dst []byte, command, idJSON string) []byte {
	dst = append(dst, `{"command":`...)
	dst = AppendString(dst, command)
	if idJSON != "" {
		dst = append(dst, `,"id":`...)
		dst = append(dst, idJSON...)
	}
	dst = append(dst, '}')
	return AppendFrame(dst)
}

// AppendTaskIDs appends the reply to an emit that needs its task ids,
// framed.
func AppendTaskIDs(dst []byte, tasks []int) []byte {
	dst = append(dst, '[')
	for i, t := range tasks {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = strconv.AppendInt(dst, int64(t), 10)
	}
	dst = append(dst, ']')
	return AppendFrame(dst)
}

// heartbeat is the heartbeat tuple sent to a bolt subprocess.
var heartbeat = mustTuple("-1", SystemComponent, HeartbeatStream, -1)

func mustTuple(id, comp, stream string, task int) []byte {
	b, err := AppendTuple(nil, id, comp, stream, task, nil)
	if err != nil {
		panic(err)
	}
	return b
}

// Reader reads the messages of a subprocess: JSON text over one or more
// lines, each message followed by a line "end". Blank lines between
// messages are skipped.
type Reader struct {
	br  *bufio.Reader
	max int
	buf []byte
}

// NewReader reads from r; a message longer than maxBytes is an error
// wrapping ErrTooLarge.
func NewReader(r io.Reader, maxBytes int) *Reader {
	return &Reader{br: bufio.NewReaderSize(r, 64<<10), max: maxBytes}
}

// Next returns the JSON text of the next message, valid until the next
// call. It returns io.EOF at the end of input between messages and
// io.ErrUnexpectedEOF inside one.
func (r *Reader) Next() ([]byte, error) {
	r.buf = r.buf[:0]
	lineStart := 0
	for {
		chunk, err := r.br.ReadSlice('\n')
		if len(r.buf)+len(chunk) > r.max+len(endLine)+2 {
			return nil, fmt.Errorf("%w: more than %d bytes without an \"end\" line (does the subprocess print to stdout?)", ErrTooLarge, r.max)
		}
		r.buf = append(r.buf, chunk...)
		switch {
		case err == nil:
		case errors.Is(err, bufio.ErrBufferFull):
			continue // a long line: keep reading it
		case errors.Is(err, io.EOF):
			if len(bytes.TrimSpace(r.buf)) == 0 {
				return nil, io.EOF
			}
			return nil, io.ErrUnexpectedEOF
		default:
			return nil, err
		}
		line := bytes.TrimRight(r.buf[lineStart:], "\r\n")
		if string(line) == endLine {
			msg := bytes.TrimSpace(r.buf[:lineStart])
			if len(msg) == 0 {
				return nil, fmt.Errorf("%w: an empty message (an \"end\" line with nothing before it)", ErrProtocol)
			}
			return msg, nil
		}
		lineStart = len(r.buf)
	}
}
