package wire

import (
	"bufio"
	"fmt"
	"io"
	"math/rand/v2"
	"time"

	"google.golang.org/protobuf/proto"
)

// WriteMessage writes m as one control frame to w.
func WriteMessage(w io.Writer, m proto.Message) error {
	b, err := AppendMessage(nil, m)
	if err != nil {
		return err
	}
	_, err = w.Write(b)
	return err
}

// ReadMessage reads one frame from r and decodes it as a control message:
// what a handshake expects. A data frame is an error. buf is reused as in
// ReadFrame and returned.
func ReadMessage(r *bufio.Reader, buf []byte, max int) (FrameType, proto.Message, []byte, error) {
	t, payload, buf, err := ReadFrame(r, buf, max)
	if err != nil {
		return 0, nil, buf, err
	}
	if t == FrameData {
		return t, nil, buf, fmt.Errorf("%w: data frame where a control message was expected", ErrCorrupt)
	}
	m, err := DecodeMessage(t, payload)
	return t, m, buf, err
}

// Backoff computes reconnection delays: exponential from Initial to Max,
// with ±20% jitter so that restarted peers do not reconnect in lockstep.
// The zero value uses 50ms and 5s.
type Backoff struct {
	Initial, Max time.Duration
	cur          time.Duration
}

// Next returns the next delay.
func (b *Backoff) Next() time.Duration {
	if b.Initial <= 0 {
		b.Initial = 50 * time.Millisecond
	}
	if b.Max <= 0 {
		b.Max = 5 * time.Second
	}
	if b.cur == 0 {
		b.cur = b.Initial
	} else {
		b.cur = min(b.cur*2, b.Max)
	}
	j := float64(b.cur) * (0.8 + 0.4*rand.Float64())
	return time.Duration(j)
}

// Reset starts again from Initial.
func (b *Backoff) Reset() { b.cur = 0 }
