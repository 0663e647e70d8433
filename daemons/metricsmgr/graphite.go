package metricsmgr

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/egret-stream/egret/proto/egretpb"
)

// graphiteSink writes reports to a Graphite (carbon) line receiver in the
// plaintext protocol, one line per metric:
//
//	<prefix>.<topology>.<component>.<task>.<metric> <value> <unix seconds>
//
// for an instance, and <prefix>.<topology>.<source>.<container>.<metric>
// for a daemon. While the receiver is down reports wait in the sink's
// bounded queue (sinkQueue reports); beyond it they are dropped and
// counted. It reconnects with backoff. The protocol has no
// acknowledgement: lines written just before a receiver dies are lost.
type graphiteSink struct {
	topology string
	addr     string
	prefix   string
	log      *zap.Logger
	ch       reportQueue
	// dialTimeout and writeTimeout bound a dial and a write, so that a
	// receiver that accepts and then stalls never holds the sink forever.
	dialTimeout, writeTimeout time.Duration
	// sent counts lines written, for tests and the log.
	sent atomic.Int64
}

// graphiteSinkFrom is the graphite sink of cfg.
func graphiteSinkFrom(cfg Config, log *zap.Logger) (sink, error) {
	if cfg.GraphiteAddr == "" {
		return nil, fmt.Errorf("the graphite sink needs the address of a line receiver (%s)", KeyGraphiteAddress)
	}
	if _, _, err := net.SplitHostPort(cfg.GraphiteAddr); err != nil {
		return nil, fmt.Errorf("%s: %q is not host:port", KeyGraphiteAddress, cfg.GraphiteAddr)
	}
	return newGraphiteSink(cfg.TopologyName, cfg.GraphiteAddr, cmp.Or(cfg.GraphitePrefix, "egret"), log.Named("graphite")), nil
}

func newGraphiteSink(topology, addr, prefix string, log *zap.Logger) *graphiteSink {
	return &graphiteSink{topology: topology, addr: addr, prefix: prefix, log: log,
		ch: newReportQueue(), dialTimeout: 5 * time.Second, writeTimeout: 10 * time.Second}
}

func (s *graphiteSink) offer(m *egretpb.MetricsPublish) bool { return s.ch.offer(m) }

func (s *graphiteSink) name() string { return SinkGraphite }

func (s *graphiteSink) run(ctx context.Context) {
	var pending []byte // lines not yet written when a connection failed
	for attempt := 0; ; attempt++ {
		var connected bool
		var err error
		pending, connected, err = s.send(ctx, pending)
		if ctx.Err() != nil {
			return
		}
		if connected {
			attempt = 0
		}
		if attempt == 0 {
			s.log.Warn("graphite sink lost its receiver; reconnecting", zap.String("address", s.addr), zap.Error(err))
		}
		select {
		case <-time.After(backoff(attempt)):
		case <-ctx.Done():
			return
		}
	}
}

// send connects and writes reports until the connection fails. It returns
// the lines not yet written (a line cut by the failure is dropped, never
// sent in halves) and whether it connected.
func (s *graphiteSink) send(ctx context.Context, pending []byte) ([]byte, bool, error) {
	d := net.Dialer{Timeout: s.dialTimeout}
	conn, err := d.DialContext(ctx, "tcp", s.addr)
	if err != nil {
		return pending, false, err
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	s.log.Info("graphite sink connected", zap.String("address", s.addr))
	// A receiver never writes: a read returning means it closed, noticed
	// before the next write would vanish into a dead connection.
	closed := make(chan struct{})
	go func() {
		var b [1]byte
		_, _ = conn.Read(b[:])
		close(closed)
	}()
	buf := pending
	for {
		if len(buf) > 0 {
			_ = conn.SetWriteDeadline(time.Now().Add(s.writeTimeout))
			n, err := conn.Write(buf)
			s.sent.Add(int64(bytes.Count(buf[:n], newline)))
			if err != nil {
				rest := buf[n:]
				if n > 0 && buf[n-1] != '\n' {
					if i := bytes.IndexByte(rest, '\n'); i >= 0 {
						rest = rest[i+1:]
					} else {
						rest = nil
					}
				}
				return append(pending[:0], rest...), true, err
			}
			buf = buf[:0]
		}
		select {
		case <-ctx.Done():
			return nil, true, ctx.Err()
		case <-closed:
			return buf, true, errors.New("the receiver closed the connection")
		case m := <-s.ch:
			buf = s.appendLines(buf, m)
			// Batch what is already queued into one write.
			for len(s.ch) > 0 && len(buf) < 64<<10 {
				buf = s.appendLines(buf, <-s.ch)
			}
		}
	}
}

var newline = []byte{'\n'}

// appendLines appends the plaintext lines of one report.
func (s *graphiteSink) appendLines(b []byte, m *egretpb.MetricsPublish) []byte {
	path := make([]byte, 0, 128)
	path = appendPathPart(append(path, s.prefix...), s.topology)
	if m.GetComponent() != "" {
		path = appendPathPart(path, m.GetComponent())
		path = strconv.AppendInt(append(path, '.'), int64(m.GetTaskId()), 10)
	} else {
		path = appendPathPart(path, m.GetSource())
		path = strconv.AppendInt(append(path, '.'), int64(m.GetContainer()), 10)
	}
	ts := m.GetUnixNanos() / 1e9
	if ts <= 0 {
		ts = time.Now().Unix()
	}
	for _, mt := range m.GetMetrics() {
		if mt.GetName() == "" {
			continue
		}
		b = append(b, path...)
		b = append(b, '.')
		b = appendMetricName(b, mt.GetName())
		b = append(b, ' ')
		b = strconv.AppendFloat(b, mt.GetValue(), 'f', -1, 64)
		b = append(b, ' ')
		b = strconv.AppendInt(b, ts, 10)
		b = append(b, '\n')
	}
	return b
}

// appendPathPart appends "."+part with every character that would break
// the path (dots, spaces, control characters) replaced by '_'.
func appendPathPart(b []byte, part string) []byte {
	b = append(b, '.')
	for i := 0; i < len(part); i++ {
		c := part[i]
		if graphiteSafe(c) {
			b = append(b, c)
		} else {
			b = append(b, '_')
		}
	}
	return b
}

// appendMetricName appends a metric name, keeping its dots as path
// separators.
func appendMetricName(b []byte, name string) []byte {
	for i := 0; i < len(name); i++ {
		c := name[i]
		if c == '.' || graphiteSafe(c) {
			b = append(b, c)
		} else {
			b = append(b, '_')
		}
	}
	return b
}

func graphiteSafe(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-'
}
