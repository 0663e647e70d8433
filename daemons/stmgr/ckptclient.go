package stmgr

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"go.uber.org/zap"
	"google.golang.org/protobuf/proto"

	"github.com/egret-stream/egret/daemons/wire"
	"github.com/egret-stream/egret/proto/egretpb"
)

// ckptClient is the stream manager's connection to its container's
// checkpoint manager: requests are written one at a time and each waits
// for its response (the checkpoint manager answers in order).
type ckptClient struct {
	socket string
	log    *zap.Logger
	reqs   chan ckptCall
}

type ckptCall struct {
	msg  proto.Message
	done func(proto.Message, error)
}

// ckptCallTimeout bounds one request, storage included.
const ckptCallTimeout = 2 * time.Minute

func newCkptClient(socket string, log *zap.Logger) *ckptClient {
	return &ckptClient{socket: socket, log: log, reqs: make(chan ckptCall, 4096)}
}

// call queues a request; done runs on the client's goroutine with the
// response or an error.
func (c *ckptClient) call(m proto.Message, done func(proto.Message, error)) {
	if c.socket == "" {
		done(nil, errors.New("no checkpoint manager socket configured (--ckptmgr-socket)"))
		return
	}
	select {
	case c.reqs <- ckptCall{m, done}:
	default:
		done(nil, errors.New("too many checkpoint manager requests queued"))
	}
}

// run serves the queued requests until ctx ends, connecting (and
// reconnecting) when a request needs the connection.
func (c *ckptClient) run(ctx context.Context, maxFrame int) {
	var conn net.Conn
	var br *bufio.Reader
	var buf, out []byte
	bo := wire.Backoff{}
	defer func() {
		if conn != nil {
			_ = conn.Close()
		}
	}()
	for {
		var req ckptCall
		select {
		case <-ctx.Done():
			return
		case req = <-c.reqs:
		}
		var resp proto.Message
		var err error
		for attempt := 0; attempt < 2; attempt++ {
			if conn == nil {
				d := net.Dialer{Timeout: 5 * time.Second}
				if conn, err = d.DialContext(ctx, "unix", c.socket); err != nil {
					conn = nil
					err = fmt.Errorf("connect to the checkpoint manager at %s: %w", c.socket, err)
					select {
					case <-time.After(bo.Next()):
					case <-ctx.Done():
					}
					continue
				}
				bo.Reset()
				br = bufio.NewReaderSize(conn, 64<<10)
			}
			_ = conn.SetDeadline(time.Now().Add(ckptCallTimeout))
			if out, err = wire.AppendMessage(out[:0], req.msg); err != nil {
				break // cannot encode: do not retry
			}
			if _, err = conn.Write(out); err == nil {
				var t wire.FrameType
				t, resp, buf, err = wire.ReadMessage(br, buf, maxFrame)
				if err == nil && !matches(req.msg, resp) {
					err = fmt.Errorf("%w: %s answered with %s", wire.ErrCorrupt, proto.MessageName(req.msg), t)
				}
			}
			if err == nil {
				break
			}
			c.log.Warn("checkpoint manager request failed; reconnecting", zap.Error(err))
			_ = conn.Close()
			conn = nil
		}
		req.done(resp, err)
	}
}

// matches reports whether resp is the response type of req.
func matches(req, resp proto.Message) bool {
	switch req.(type) {
	case *egretpb.SaveStateRequest:
		_, ok := resp.(*egretpb.SaveStateResponse)
		return ok
	case *egretpb.LoadStateRequest:
		_, ok := resp.(*egretpb.LoadStateResponse)
		return ok
	case *egretpb.CleanCheckpointsRequest:
		_, ok := resp.(*egretpb.CleanCheckpointsResponse)
		return ok
	}
	return false
}

// responseError returns the error a checkpoint manager response carries.
func responseError(resp proto.Message) error {
	switch r := resp.(type) {
	case *egretpb.SaveStateResponse:
		if r.GetError() != "" {
			return errors.New(r.GetError())
		}
	case *egretpb.LoadStateResponse:
		if r.GetNotFound() {
			return fmt.Errorf("checkpoint %d has no state of task %d", r.GetCheckpointId(), r.GetTaskId())
		}
		if r.GetError() != "" {
			return errors.New(r.GetError())
		}
	case *egretpb.CleanCheckpointsResponse:
		if r.GetError() != "" {
			return errors.New(r.GetError())
		}
	}
	return nil
}
