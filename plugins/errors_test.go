package plugins_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"google.golang.org/grpc/status"

	"github.com/egret-stream/egret/core/spi"
	"github.com/egret-stream/egret/plugins"
	"github.com/egret-stream/egret/plugins/plugintest"
)

var allSentinels = []error{
	spi.ErrNotFound, spi.ErrExists, spi.ErrVersionConflict, spi.ErrNotEmpty, spi.ErrLockHeld,
	spi.ErrClosed, spi.ErrUnsupported, spi.ErrCannotFit, spi.ErrUnknownBackend,
	fs.ErrNotExist, fs.ErrExist, fs.ErrPermission, context.Canceled, context.DeadlineExceeded,
}

// failing is a state manager whose Get returns errs[path].
type failing struct {
	spi.StateManager
	errs map[string]error
}

func (f failing) Get(_ context.Context, path string) (spi.Node, error) {
	return spi.Node{}, f.errs[path]
}

func TestErrorsCrossTheBoundary(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want []error // sentinels errors.Is must find
	}{
		{"plain", errors.New("disk on fire"), nil},
		{"join", errors.Join(spi.ErrNotFound, spi.ErrClosed), []error{spi.ErrNotFound, spi.ErrClosed}},
		{"multiwrap", fmt.Errorf("op 2: %w (%w)", spi.ErrLockHeld, context.DeadlineExceeded), []error{spi.ErrLockHeld, context.DeadlineExceeded}},
	}
	for _, s := range allSentinels {
		tests = append(tests, struct {
			name string
			err  error
			want []error
		}{s.Error(), fmt.Errorf("get /topologies/x: %w", s), []error{s}})
	}
	errs := map[string]error{}
	for i, tc := range tests {
		errs[fmt.Sprintf("/e%d", i)] = tc.err
	}
	sm := plugintest.StateManager(t, func(spi.Config, *zap.Logger) (spi.StateManager, error) {
		return failing{StateManager: nopSession{}, errs: errs}, nil
	}, nil)
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := sm.Get(context.Background(), fmt.Sprintf("/e%d", i))
			if err == nil {
				t.Fatal("no error")
			}
			if err.Error() != tc.err.Error() {
				t.Errorf("message %q, want %q", err, tc.err)
			}
			for _, s := range allSentinels {
				want := false
				for _, w := range tc.want {
					want = want || w == s
				}
				if got := errors.Is(err, s); got != want {
					t.Errorf("errors.Is(%q, %q) = %v, want %v", err, s, got, want)
				}
			}
		})
	}
}

func TestErrorsHaveGRPCCodes(t *testing.T) {
	for _, s := range allSentinels {
		st := statusOf(t, fmt.Errorf("x: %w", s))
		if st == "Unknown" || st == "OK" {
			t.Errorf("%v is sent with code %s, want a specific code", s, st)
		}
	}
	if st := statusOf(t, errors.New("x")); st != "Unknown" {
		t.Errorf("a plain error is sent with code %s, want Unknown", st)
	}
	if !strings.Contains(statusOf(t, spi.ErrNotFound), "NotFound") {
		t.Error("ErrNotFound is not NotFound")
	}
}

func statusOf(t *testing.T, err error) string {
	t.Helper()
	return status.Code(plugins.ToStatus(err)).String()
}

// nopSession is a state manager that supports nothing.
type nopSession struct{}

func (nopSession) Get(context.Context, string) (spi.Node, error) {
	return spi.Node{}, spi.ErrUnsupported
}
func (nopSession) Children(context.Context, string) ([]string, error) {
	return nil, spi.ErrUnsupported
}
func (nopSession) Create(context.Context, string, []byte, bool) error { return spi.ErrUnsupported }
func (nopSession) Set(context.Context, string, []byte, int64) (int64, error) {
	return 0, spi.ErrUnsupported
}
func (nopSession) Delete(context.Context, string, int64) error { return spi.ErrUnsupported }
func (nopSession) Multi(context.Context, ...spi.Op) error      { return spi.ErrUnsupported }
func (nopSession) Watch(context.Context, string) (<-chan spi.Event, error) {
	return nil, spi.ErrUnsupported
}
func (nopSession) Lock(context.Context, string) (func() error, error) {
	return nil, spi.ErrUnsupported
}
func (nopSession) SessionTimeout() time.Duration { return time.Second }
func (nopSession) Close() error                  { return nil }
