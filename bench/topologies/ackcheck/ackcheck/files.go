package ackcheck

import (
	"fmt"
	"os"
	"strconv"
)

// File name patterns of the state directory (filepath.Glob syntax).
const (
	AckedGlob   = "acked-*.log"
	ReplaysGlob = "replays-*.log"
	SinkGlob    = "sink-*.log"
	CursorGlob  = "cursor-*"
)

// AckedLog is the acked log of the spout task with this index.
func AckedLog(index int) string { return fmt.Sprintf("acked-%d.log", index) }

// ReplaysLog is the replay log of the spout task with this index.
func ReplaysLog(index int) string { return fmt.Sprintf("replays-%d.log", index) }

// Cursor is the cursor file of the spout task with this index.
func Cursor(index int) string { return fmt.Sprintf("cursor-%d", index) }

// SinkLog is the record file of the sink task with this task id.
func SinkLog(task int) string { return fmt.Sprintf("sink-%d.log", task) }

// cursorLen is the size of a cursor record: 20 digits and a newline.
const cursorLen = 21

// ReadCursor returns the highest id a spout task emitted fresh, or -1 when
// it emitted none (or the file does not exist).
func ReadCursor(path string) (int64, error) {
	f, err := os.Open(path)
	if os.IsNotExist(err) {
		return -1, nil
	}
	if err != nil {
		return 0, err
	}
	defer f.Close()
	return readCursor(f), nil
}

func readCursor(f *os.File) int64 {
	b := make([]byte, cursorLen)
	n, _ := f.ReadAt(b, 0)
	if n == cursorLen && b[cursorLen-1] == '\n' {
		if v, err := strconv.ParseInt(string(b[:cursorLen-1]), 10, 64); err == nil {
			return v
		}
	}
	return -1
}
