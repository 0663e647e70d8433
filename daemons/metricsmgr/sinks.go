package metricsmgr

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"time"

	"go.uber.org/zap"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/egret-stream/egret/core/spi"
	"github.com/egret-stream/egret/core/state"
	"github.com/egret-stream/egret/daemons/wire"
	"github.com/egret-stream/egret/proto/egretpb"
)

const sinkQueue = 1024

// fileSink appends reports as JSON lines.
type fileSink struct {
	path string
	max  int64
	log  *zap.Logger
	ch   chan *egretpb.MetricsPublish
}

func newFileSink(path string, max int64, log *zap.Logger) *fileSink {
	if max <= 0 {
		max = 64 << 20
	}
	return &fileSink{path: path, max: max, log: log, ch: make(chan *egretpb.MetricsPublish, sinkQueue)}
}

func (s *fileSink) offer(m *egretpb.MetricsPublish) bool {
	select {
	case s.ch <- m:
		return true
	default:
		return false
	}
}

func (s *fileSink) run(ctx context.Context) {
	var f *os.File
	var w *bufio.Writer
	var size int64
	open := func() error {
		var err error
		f, err = os.OpenFile(s.path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return err
		}
		st, err := f.Stat()
		if err != nil {
			return err
		}
		size, w = st.Size(), bufio.NewWriter(f)
		return nil
	}
	closeFile := func() {
		if f != nil {
			_ = w.Flush()
			_ = f.Close()
			f = nil
		}
	}
	defer closeFile()
	for {
		select {
		case <-ctx.Done():
			return
		case m := <-s.ch:
			if f == nil {
				if err := open(); err != nil {
					s.log.Error("file sink cannot open its file; dropping reports", zap.String("path", s.path), zap.Error(err))
					continue
				}
			}
			line, err := protojson.Marshal(m)
			if err != nil {
				continue
			}
			if size+int64(len(line))+1 > s.max {
				closeFile()
				_ = os.Rename(s.path, s.path+".1")
				if err := open(); err != nil {
					s.log.Error("file sink cannot reopen its file", zap.Error(err))
					continue
				}
			}
			_, _ = w.Write(line)
			_ = w.WriteByte('\n')
			size += int64(len(line)) + 1
			if len(s.ch) == 0 {
				_ = w.Flush()
			}
		}
	}
}

// tmanagerSink forwards reports to the topology manager's server port.
type tmanagerSink struct {
	topology string
	store    *state.Store
	log      *zap.Logger
	ch       chan *egretpb.MetricsPublish
}

func newTManagerSink(topology string, sm spi.StateManager, log *zap.Logger) *tmanagerSink {
	return &tmanagerSink{topology: topology, store: state.New(sm), log: log, ch: make(chan *egretpb.MetricsPublish, sinkQueue)}
}

func (s *tmanagerSink) offer(m *egretpb.MetricsPublish) bool {
	select {
	case s.ch <- m:
		return true
	default:
		return false
	}
}

func (s *tmanagerSink) run(ctx context.Context) {
	for attempt := 0; ctx.Err() == nil; attempt++ {
		err := s.forward(ctx)
		if ctx.Err() != nil {
			return
		}
		s.log.Debug("tmanager sink disconnected; retrying", zap.Error(err))
		select {
		case <-time.After(backoff(attempt)):
		case <-ctx.Done():
			return
		}
	}
}

// forward connects to the current topology manager and sends reports until
// the connection fails.
func (s *tmanagerSink) forward(ctx context.Context) error {
	loc, err := s.store.TManagerLocation(ctx, s.topology)
	if err != nil {
		return err
	}
	addr := net.JoinHostPort(loc.GetHost(), strconv.Itoa(int(loc.GetServerPort())))
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return fmt.Errorf("dial topology manager at %s: %w", addr, err)
	}
	defer conn.Close()
	// The topology manager never writes to a metrics connection; a read
	// returning means it closed.
	closed := make(chan struct{})
	go func() {
		var b [1]byte
		_, _ = conn.Read(b[:])
		close(closed)
	}()
	w := bufio.NewWriter(conn)
	var buf []byte
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-closed:
			return errors.New("topology manager closed the connection")
		case m := <-s.ch:
			buf, err = wire.AppendMessage(buf[:0], m)
			if err != nil {
				continue
			}
			if _, err := w.Write(buf); err != nil {
				return err
			}
			if len(s.ch) == 0 {
				if err := w.Flush(); err != nil {
					return err
				}
			}
		}
	}
}
