package harness

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// CalibrationOptions configure the calibration run (performance-anchors.md
// §5): how fast this machine moves batched small frames through loopback
// TCP, a Unix socket and an in-process channel, so engine figures can be
// compared across machines as a fraction of it.
type CalibrationOptions struct {
	// Duration is how long each transport is measured (default 2s).
	Duration time.Duration
	// FrameBytes is the size of a frame including its 4-byte length
	// prefix (default 100); WriteBytes the size of one write, a batch of
	// whole frames (default 64 KiB).
	FrameBytes, WriteBytes int
}

// Calibration is the outcome of the calibration run.
type Calibration struct {
	Machine    Machine `json:"machine"`
	FrameBytes int     `json:"frame_bytes"`
	WriteBytes int     `json:"write_bytes"`
	// Seconds is the measured time per transport.
	Seconds    float64                `json:"seconds"`
	Transports []CalibrationTransport `json:"transports"`
}

// CalibrationTransport is one transport's figures. CPU is the user+system
// time of this process (writer and reader together) in the measurement.
type CalibrationTransport struct {
	Name                 string  `json:"name"`
	BytesPerSec          float64 `json:"bytes_per_sec"`
	FramesPerSec         float64 `json:"frames_per_sec"`
	Cores                float64 `json:"cores"`
	CPUSecondsPerMFrames float64 `json:"cpu_seconds_per_million_frames"`
}

// Transport names of the calibration.
const (
	CalibrationTCP     = "loopback TCP"
	CalibrationUnix    = "Unix socket"
	CalibrationChannel = "in-process channel"
)

// Get returns the named transport's figures.
func (c *Calibration) Get(name string) (CalibrationTransport, bool) {
	if c == nil {
		return CalibrationTransport{}, false
	}
	for _, t := range c.Transports {
		if t.Name == name {
			return t, true
		}
	}
	return CalibrationTransport{}, false
}

// RunCalibration measures the three transports one after the other.
func RunCalibration(ctx context.Context, o CalibrationOptions) (*Calibration, error) {
	if o.Duration <= 0 {
		o.Duration = 2 * time.Second
	}
	if o.FrameBytes <= 0 {
		o.FrameBytes = 100
	}
	if o.WriteBytes <= 0 {
		o.WriteBytes = 64 << 10
	}
	if o.FrameBytes < 8 || o.WriteBytes < o.FrameBytes {
		return nil, fmt.Errorf("calibration: frames must be at least 8 bytes and writes hold at least one frame (got %d and %d)", o.FrameBytes, o.WriteBytes)
	}
	res := &Calibration{Machine: DescribeMachine(), FrameBytes: o.FrameBytes, WriteBytes: o.WriteBytes, Seconds: o.Duration.Seconds()}
	batch := frameBatch(o.FrameBytes, o.WriteBytes)
	dir, err := os.MkdirTemp("", "egret-calib-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	for _, tr := range []struct {
		name string
		run  func(context.Context, []byte, time.Duration) (int64, error)
	}{
		{CalibrationTCP, func(ctx context.Context, b []byte, d time.Duration) (int64, error) {
			return streamOver(ctx, "tcp", "127.0.0.1:0", b, d)
		}},
		{CalibrationUnix, func(ctx context.Context, b []byte, d time.Duration) (int64, error) {
			return streamOver(ctx, "unix", filepath.Join(dir, "calib.sock"), b, d)
		}},
		{CalibrationChannel, streamChannel},
	} {
		cpu0 := processCPU()
		start := time.Now()
		frames, err := tr.run(ctx, batch, o.Duration)
		if err != nil {
			return nil, fmt.Errorf("calibration over %s: %w", tr.name, err)
		}
		secs := time.Since(start).Seconds()
		cpu := processCPU() - cpu0
		t := CalibrationTransport{
			Name:         tr.name,
			FramesPerSec: float64(frames) / secs,
			BytesPerSec:  float64(frames) * float64(o.FrameBytes) / secs,
			Cores:        cpu / secs,
		}
		if frames > 0 {
			t.CPUSecondsPerMFrames = cpu / (float64(frames) / 1e6)
		}
		res.Transports = append(res.Transports, t)
	}
	return res, nil
}

// frameBatch returns one write's worth of frames: a 4-byte big-endian
// length, then the payload.
func frameBatch(frame, write int) []byte {
	n := write / frame
	b := make([]byte, n*frame)
	for i := range n {
		f := b[i*frame : (i+1)*frame]
		binary.BigEndian.PutUint32(f, uint32(frame-4))
		for j := 4; j < frame; j++ {
			f[j] = byte(i + j)
		}
	}
	return b
}

// countFrames walks the frames of buf (carry holds a partial frame from
// the previous call) and returns how many were complete and what is left.
func countFrames(carry, buf []byte) (int64, []byte) {
	data := buf
	if len(carry) > 0 {
		data = append(carry, buf...)
	}
	var n int64
	for len(data) >= 4 {
		l := int(binary.BigEndian.Uint32(data)) + 4
		if len(data) < l {
			break
		}
		// Touch the payload like a decoder would.
		_ = data[l-1]
		data = data[l:]
		n++
	}
	return n, append(carry[:0], data...)
}

// streamOver writes batch repeatedly over a connection of network for d
// while a reader counts the frames it receives.
func streamOver(ctx context.Context, network, addr string, batch []byte, d time.Duration) (int64, error) {
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, network, addr)
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	type result struct {
		n   int64
		err error
	}
	got := make(chan result, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			got <- result{err: err}
			return
		}
		defer c.Close()
		buf := make([]byte, len(batch))
		var carry []byte
		var total int64
		for {
			k, err := c.Read(buf)
			var n int64
			n, carry = countFrames(carry, buf[:k])
			total += n
			if err != nil {
				if errors.Is(err, io.EOF) {
					err = nil
				}
				got <- result{total, err}
				return
			}
		}
	}()
	var dialer net.Dialer
	c, err := dialer.DialContext(ctx, network, ln.Addr().String())
	if err != nil {
		return 0, err
	}
	deadline := time.Now().Add(d)
	for i := 0; ; i++ {
		if _, err := c.Write(batch); err != nil {
			c.Close()
			return 0, err
		}
		if i%16 == 0 && (time.Now().After(deadline) || ctx.Err() != nil) {
			break
		}
	}
	c.Close()
	r := <-got
	if r.err != nil {
		return 0, r.err
	}
	return r.n, ctx.Err()
}

// streamChannel passes copies of batch through a buffered channel of
// recycled buffers to a goroutine that counts the frames.
func streamChannel(ctx context.Context, batch []byte, d time.Duration) (int64, error) {
	const buffers = 8
	free := make(chan []byte, buffers)
	for range buffers {
		free <- make([]byte, len(batch))
	}
	full := make(chan []byte, buffers)
	got := make(chan int64, 1)
	go func() {
		var total int64
		var carry []byte
		for b := range full {
			n, c := countFrames(carry, b)
			carry = c
			total += n
			free <- b
		}
		got <- total
	}()
	deadline := time.Now().Add(d)
	for i := 0; ; i++ {
		b := <-free
		copy(b, batch)
		full <- b
		if i%16 == 0 && (time.Now().After(deadline) || ctx.Err() != nil) {
			break
		}
	}
	close(full)
	return <-got, ctx.Err()
}

// processCPU is this process's user+system time in seconds.
func processCPU() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}
