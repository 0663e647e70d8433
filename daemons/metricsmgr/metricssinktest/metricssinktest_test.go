package metricssinktest_test

import (
	"context"
	"io"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/egret-stream/egret/core/spi"
	"github.com/egret-stream/egret/core/spi/spitest"
	"github.com/egret-stream/egret/daemons/metricsmgr/metricssinktest"
	"github.com/egret-stream/egret/proto/egretpb"
)

// memSink keeps what it is given in memory; its flaws are switchable, to
// show that the suite finds each.
type memSink struct {
	dest *dest
	flaws

	mu     sync.Mutex
	closed int
}

type flaws struct {
	ignoreCtx, dropLast, reverse, nilAfterClose, failSecondClose bool
}

type dest struct {
	mu  sync.Mutex
	got []*egretpb.MetricsPublish
}

func (s *memSink) Report(ctx context.Context, batch []*egretpb.MetricsPublish) error {
	if err := ctx.Err(); err != nil && !s.ignoreCtx {
		return err
	}
	s.mu.Lock()
	closed := s.closed > 0
	s.mu.Unlock()
	if closed {
		if s.nilAfterClose {
			return nil
		}
		return spi.ErrClosed
	}
	b := slices.Clone(batch)
	if s.reverse {
		slices.Reverse(b)
	}
	if s.dropLast && len(b) > 1 {
		b = b[:len(b)-1]
	}
	s.dest.mu.Lock()
	s.dest.got = append(s.dest.got, b...)
	s.dest.mu.Unlock()
	return nil
}

func (s *memSink) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed++
	if s.closed > 1 && s.failSecondClose {
		return io.ErrClosedPipe
	}
	return nil
}

func run(f flaws) []spitest.Result {
	d := &dest{}
	suite := metricssinktest.Suite{
		Open: func(context.Context) (spi.MetricsSink, error) {
			return &memSink{dest: d, flaws: f}, nil
		},
		Delivered: func(context.Context) ([]*egretpb.MetricsPublish, error) {
			d.mu.Lock()
			defer d.mu.Unlock()
			return slices.Clone(d.got), nil
		},
		DeliveryTimeout: time.Second, // a lost report is waited for that long
	}
	rep := spitest.NewReporter(io.Discard, spitest.Options{CheckTimeout: 2 * time.Minute})
	rep.Run(context.Background(), "sink", suite.Run)
	return rep.Results()
}

func failed(results []spitest.Result) []string {
	var out []string
	for _, r := range results {
		if r.Status == spitest.Fail {
			out = append(out, r.Name)
		}
	}
	return out
}

func TestSuitePassesACorrectSink(t *testing.T) {
	if f := failed(run(flaws{})); len(f) != 0 {
		t.Fatalf("checks failed on a correct sink: %v", f)
	}
}

// TestSuiteFindsEachFlaw: every flaw fails the check meant to catch it.
func TestSuiteFindsEachFlaw(t *testing.T) {
	for _, tc := range []struct {
		flaw  string
		sink  flaws
		check string
	}{
		{"ignores a cancelled context", flaws{ignoreCtx: true}, "CancelledContext"},
		{"loses a report of each batch", flaws{dropLast: true}, "ReportsArriveInOrder"},
		{"reorders a batch", flaws{reverse: true}, "ReportsArriveInOrder"},
		{"accepts reports after Close", flaws{nilAfterClose: true}, "ReportAfterClose"},
		{"fails a second Close", flaws{failSecondClose: true}, "CloseIsIdempotent"},
	} {
		f := failed(run(tc.sink))
		if !slices.ContainsFunc(f, func(n string) bool { return strings.HasSuffix(n, "/"+tc.check) }) {
			t.Errorf("a sink that %s: failed checks %v, want %s among them", tc.flaw, f, tc.check)
		}
	}
}
