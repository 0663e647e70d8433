package plugins

import (
	"context"
	"errors"
	"fmt"
	"io/fs"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/egret-stream/egret/core/spi"
	"github.com/egret-stream/egret/proto/pluginpb"
)

// sentinel is an error that crosses the plugin boundary by name.
type sentinel struct {
	name string
	err  error
	code codes.Code
}

// sentinels are the errors encoded in pluginpb.ErrorDetail, in the order
// that picks the gRPC code of an error wrapping several of them.
var sentinels = []sentinel{
	{"not_found", spi.ErrNotFound, codes.NotFound},
	{"exists", spi.ErrExists, codes.AlreadyExists},
	{"version_conflict", spi.ErrVersionConflict, codes.Aborted},
	{"not_empty", spi.ErrNotEmpty, codes.FailedPrecondition},
	{"lock_held", spi.ErrLockHeld, codes.Aborted},
	{"closed", spi.ErrClosed, codes.FailedPrecondition},
	{"unsupported", spi.ErrUnsupported, codes.Unimplemented},
	{"cannot_fit", spi.ErrCannotFit, codes.ResourceExhausted},
	{"corrupt", spi.ErrCorrupt, codes.DataLoss},
	{"unknown_backend", spi.ErrUnknownBackend, codes.NotFound},
	{"fs_not_exist", fs.ErrNotExist, codes.NotFound},
	{"fs_exist", fs.ErrExist, codes.AlreadyExists},
	{"fs_permission", fs.ErrPermission, codes.PermissionDenied},
	{"context_canceled", context.Canceled, codes.Canceled},
	{"context_deadline_exceeded", context.DeadlineExceeded, codes.DeadlineExceeded},
}

// toStatus converts an error of a plugin-side implementation into a gRPC
// status error. The status always carries an ErrorDetail, which tells the
// host that the plugin produced the error (as opposed to the transport),
// and names the sentinels the error wraps. The message is err.Error().
func toStatus(err error) error {
	if err == nil {
		return nil
	}
	code := codes.Unknown
	detail := &pluginpb.ErrorDetail{}
	for _, s := range sentinels {
		if errors.Is(err, s.err) {
			if len(detail.Sentinels) == 0 {
				code = s.code
			}
			detail.Sentinels = append(detail.Sentinels, s.name)
		}
	}
	st := status.New(code, err.Error())
	if withDetail, derr := st.WithDetails(detail); derr == nil {
		st = withDetail
	}
	return st.Err()
}

// remoteError is an error returned by the plugin-side implementation,
// rebuilt on the host: it has the plugin's message and wraps the sentinels
// it wrapped in the plugin.
type remoteError struct {
	msg  string
	errs []error
}

func (e *remoteError) Error() string   { return e.msg }
func (e *remoteError) Unwrap() []error { return e.errs }

// fromDetail rebuilds the plugin's error from a status that carries an
// ErrorDetail, or returns nil when st has none.
func fromDetail(st *status.Status) error {
	for _, d := range st.Details() {
		detail, ok := d.(*pluginpb.ErrorDetail)
		if !ok {
			continue
		}
		e := &remoteError{msg: st.Message()}
		for _, name := range detail.GetSentinels() {
			for _, s := range sentinels {
				if s.name == name {
					e.errs = append(e.errs, s.err)
				}
			}
		}
		return e
	}
	return nil
}

// notConfigured is the status of a call made before Configure.
func notConfigured(kind string) error {
	return status.Errorf(codes.FailedPrecondition, "%s plugin: not configured: the host must call Configure first", kind)
}

// errorf is fmt.Errorf for the plugin side: the result is a status error.
func errorf(format string, args ...any) error { return toStatus(fmt.Errorf(format, args...)) }
