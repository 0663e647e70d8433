package multilang

import (
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"
)

func TestDecode(t *testing.T) {
	m, err := Decode([]byte(`{"command":"emit","id":7,"stream":"s","task":3,"tuple":["a",1],"anchors":["1",2],"need_task_ids":false}`))
	if err != nil {
		t.Fatal(err)
	}
	want := &Message{Command: CmdEmit, ID: int64(7), IDKey: "7", Stream: "s", Task: 3, HasTask: true,
		Tuple: []any{"a", int64(1)}, Anchors: []string{"1", "2"}, NeedTaskIDs: false, Level: LevelInfo}
	if !reflect.DeepEqual(m, want) {
		t.Errorf("Decode = %+v, want %+v", m, want)
	}
	m, err = Decode([]byte(`{"command":"emit","tuple":[]}`))
	if err != nil || !m.NeedTaskIDs || m.HasTask || m.ID != nil {
		t.Errorf("emit defaults: %+v, %v; want need_task_ids true (Storm's default), no task, no id", m, err)
	}
	m, err = Decode([]byte(`{"pid": 42}`))
	if err != nil || m.Pid != 42 || m.Command != "" {
		t.Errorf("handshake reply: %+v, %v", m, err)
	}
	m, err = Decode([]byte(`{"command":"log","msg":"hi","level":4}`))
	if err != nil || m.Msg != "hi" || m.Level != LevelError {
		t.Errorf("log: %+v, %v", m, err)
	}
	if m, err = Decode([]byte(`{"command":"ack","id":"x"}`)); err != nil || m.IDKey != "x" {
		t.Errorf("ack: %+v, %v", m, err)
	}
}

func TestDecodeErrors(t *testing.T) {
	cases := map[string]string{
		`[1]`:                 "want a JSON object",
		`{"command":1}`:       `"command" is a number`,
		`{"command":"dance"}`: `unknown command "dance"`,
		`{}`:                  "without \"command\"",
		`{"pid":"x"}`:         "positive integer",
		`{"command":"emit"}`:  "without a \"tuple\"",
		`{"command":"emit","tuple":[],"task":-1}`:   "want a task id",
		`{"command":"emit","tuple":[],"anchors":1}`: "array of tuple ids",
		`{"command":"ack"}`:                         "without an \"id\"",
		`{"command":"log","level":9}`:               "0 (trace) to 4",
		`{"command":"metrics"}`:                     "\"name\"",
		`{"command":`:                               "invalid JSON",
	}
	for in, want := range cases {
		_, err := Decode([]byte(in))
		if err == nil || !errors.Is(err, ErrProtocol) || !strings.Contains(err.Error(), want) {
			t.Errorf("Decode(%s) = %v, want an ErrProtocol containing %q", in, err, want)
		}
	}
}

func TestReader(t *testing.T) {
	in := "\n{\"command\":\n\"sync\"}\nend\n{\"pid\":1}\r\nend\r\n[1,2]\nend\n{\"a\""
	rd := NewReader(strings.NewReader(in), 100)
	for _, want := range []string{"{\"command\":\n\"sync\"}", "{\"pid\":1}", "[1,2]"} {
		got, err := rd.Next()
		if err != nil || string(got) != want {
			t.Fatalf("Next = %q, %v; want %q", got, err, want)
		}
	}
	if _, err := rd.Next(); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("Next in a cut message = %v, want io.ErrUnexpectedEOF", err)
	}
	if _, err := NewReader(strings.NewReader("\n\n"), 100).Next(); err != io.EOF {
		t.Errorf("Next at the end = %v, want io.EOF", err)
	}
	if _, err := NewReader(strings.NewReader(strings.Repeat("x", 200)+"\nend\n"), 100).Next(); !errors.Is(err, ErrTooLarge) {
		t.Errorf("Next of a long message = %v, want ErrTooLarge", err)
	}
	if _, err := NewReader(strings.NewReader("end\n"), 100).Next(); !errors.Is(err, ErrProtocol) {
		t.Errorf("Next of an empty message = %v, want ErrProtocol", err)
	}
}

func TestAppendMessages(t *testing.T) {
	b, err := AppendTuple(nil, "9", "split", "default", 4, []any{"w", int64(1)})
	if err != nil || string(b) != "{\"id\":\"9\",\"comp\":\"split\",\"stream\":\"default\",\"task\":4,\"tuple\":[\"w\",1]}\nend\n" {
		t.Errorf("AppendTuple = %q, %v", b, err)
	}
	if _, err := AppendTuple([]byte("keep"), "1", "c", "s", 1, []any{make(chan int)}); err == nil || !strings.Contains(err.Error(), "tuple value 0") {
		t.Errorf("AppendTuple of an unsupported value: %v", err)
	}
	if b := AppendCommand(nil, CmdAck, `"x"`); string(b) != "{\"command\":\"ack\",\"id\":\"x\"}\nend\n" {
		t.Errorf("AppendCommand = %q", b)
	}
	if b := AppendTaskIDs(nil, []int{3, 5}); string(b) != "[3,5]\nend\n" {
		t.Errorf("AppendTaskIDs = %q", b)
	}
}
