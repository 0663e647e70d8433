package metricsmgr

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"

	"go.uber.org/zap"

	"github.com/egret-stream/egret/core/spi"
	"github.com/egret-stream/egret/core/state"
	"github.com/egret-stream/egret/daemons/wire"
	"github.com/egret-stream/egret/proto/egretpb"
)

// tmanagerSinkFrom is the sink of cfg forwarding to the topology manager
// found through the state manager.
func tmanagerSinkFrom(cfg Config, log *zap.Logger) (sink, error) {
	if cfg.StateManager == nil {
		return nil, errors.New("the tmanager sink needs a state manager to find the topology manager")
	}
	return newTManagerSink(cfg.TopologyName, cfg.StateManager, log), nil
}

// tmanagerSink forwards reports to the topology manager's server port.
type tmanagerSink struct {
	topology string
	store    *state.Store
	log      *zap.Logger
	ch       reportQueue
}

func newTManagerSink(topology string, sm spi.StateManager, log *zap.Logger) *tmanagerSink {
	return &tmanagerSink{topology: topology, store: state.New(sm), log: log, ch: newReportQueue()}
}

func (s *tmanagerSink) offer(m *egretpb.MetricsPublish) bool { return s.ch.offer(m) }

func (s *tmanagerSink) name() string { return SinkTManager }

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
