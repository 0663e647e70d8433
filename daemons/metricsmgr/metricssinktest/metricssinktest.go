package metricssinktest

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/egret-stream/egret/core/spi"
	"github.com/egret-stream/egret/core/spi/spitest"
	"github.com/egret-stream/egret/proto/egretpb"
)

// Suite is the conformance suite of one metrics sink implementation.
type Suite struct {
	// Open returns a fresh sink for one check (required). The suite closes
	// every sink it opens.
	Open func(ctx context.Context) (spi.MetricsSink, error)
	// Delivered, when set, returns every report the sinks opened so far
	// delivered to their destination, in delivery order. Reports are told
	// apart by their source, component and unix_nanos; the suite's checks
	// use distinct ones.
	Delivered func(ctx context.Context) ([]*egretpb.MetricsPublish, error)
	// DeliveryTimeout bounds the wait for accepted reports to show in
	// Delivered (default 30s): a sink may deliver asynchronously.
	DeliveryTimeout time.Duration
}

// Run runs every check as a subtest of t.
func (s Suite) Run(t spitest.T) {
	t.Helper()
	if s.Open == nil {
		t.Fatal("metricssinktest: Suite.Open is required")
	}
	checks := []struct {
		name string
		f    func(spitest.T)
	}{
		{"ReportsArriveInOrder", s.reportsArriveInOrder},
		{"EmptyBatch", s.emptyBatch},
		{"LargeBatch", s.largeBatch},
		{"OddValues", s.oddValues},
		{"CancelledContext", s.cancelledContext},
		{"CloseIsIdempotent", s.closeIsIdempotent},
		{"ReportAfterClose", s.reportAfterClose},
	}
	for _, c := range checks {
		spitest.Run(t, c.name, c.f)
	}
}

func (s Suite) open(t spitest.T) spi.MetricsSink {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	sink, err := s.Open(ctx)
	if err != nil {
		t.Fatalf("open the sink: %v", err)
	}
	t.Cleanup(func() { _ = sink.Close() })
	return sink
}

func opCtx(t spitest.T) (context.Context, context.CancelFunc) {
	return context.WithTimeout(t.Context(), 30*time.Second)
}

// seq makes reports distinct across checks of one run.
type seq struct {
	check string
	base  int64
}

func newSeq(check string) seq { return seq{check: check, base: time.Now().UnixNano()} }

// report returns report i of a check: an instance report with a few
// metrics whose values derive from i.
func (q seq) report(i int) *egretpb.MetricsPublish {
	return &egretpb.MetricsPublish{
		Source:    "instance",
		Container: int32(1 + i%3),
		Component: "conformance-" + q.check,
		TaskId:    int32(1 + i%7),
		UnixNanos: q.base + int64(i),
		Metrics: []*egretpb.Metric{
			{Name: "instance.executed", Value: float64(i * 10)},
			{Name: "instance.execute.nanos", Value: float64(i) * 1e6},
			{Name: "gateway.in.queue.bytes", Value: float64(i % 1000)},
		},
	}
}

func (q seq) batch(from, n int) []*egretpb.MetricsPublish {
	out := make([]*egretpb.MetricsPublish, n)
	for i := range out {
		out[i] = q.report(from + i)
	}
	return out
}

func report(t spitest.T, sink spi.MetricsSink, batch []*egretpb.MetricsPublish) {
	t.Helper()
	ctx, cancel := opCtx(t)
	defer cancel()
	if err := sink.Report(ctx, batch); err != nil {
		t.Fatalf("Report of %d reports: %v", len(batch), err)
	}
}

// checkDelivered waits until Delivered holds want (the reports of
// component, in order, each once) and compares them.
func (s Suite) checkDelivered(t spitest.T, component string, want []*egretpb.MetricsPublish) {
	t.Helper()
	if s.Delivered == nil {
		t.Logf("no Delivered observer: what reached the destination is not checked")
		return
	}
	deadline := time.Now().Add(cmp.Or(s.DeliveryTimeout, 30*time.Second))
	var got []*egretpb.MetricsPublish
	for {
		ctx, cancel := opCtx(t)
		all, err := s.Delivered(ctx)
		cancel()
		if err != nil {
			t.Fatalf("Delivered: %v", err)
		}
		got = got[:0]
		for _, m := range all {
			if m.GetComponent() == component {
				got = append(got, m)
			}
		}
		if len(got) >= len(want) || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if len(got) != len(want) {
		t.Fatalf("%d reports of %s delivered, want %d", len(got), component, len(want))
	}
	for i := range want {
		if !sameReport(got[i], want[i]) {
			t.Fatalf("delivered report %d of %s is %v, want %v (reports must arrive once each, in order, with their values)", i, component, got[i], want[i])
		}
	}
}

// sameReport compares what a sink must keep: identity and every metric's
// name and value (NaN equal to NaN).
func sameReport(a, b *egretpb.MetricsPublish) bool {
	if a.GetSource() != b.GetSource() || a.GetContainer() != b.GetContainer() || a.GetComponent() != b.GetComponent() ||
		a.GetTaskId() != b.GetTaskId() || a.GetUnixNanos() != b.GetUnixNanos() || len(a.GetMetrics()) != len(b.GetMetrics()) {
		return false
	}
	for i, m := range a.GetMetrics() {
		n := b.GetMetrics()[i]
		if m.GetName() != n.GetName() {
			return false
		}
		if m.GetValue() != n.GetValue() && !(math.IsNaN(m.GetValue()) && math.IsNaN(n.GetValue())) {
			return false
		}
	}
	return true
}

func (s Suite) reportsArriveInOrder(t spitest.T) {
	sink := s.open(t)
	q := newSeq("order")
	var want []*egretpb.MetricsPublish
	for b := 0; b < 5; b++ {
		batch := q.batch(b*10, 10)
		report(t, sink, batch)
		want = append(want, batch...)
	}
	s.checkDelivered(t, "conformance-order", want)
}

func (s Suite) emptyBatch(t spitest.T) {
	sink := s.open(t)
	report(t, sink, nil)
	report(t, sink, []*egretpb.MetricsPublish{})
	q := newSeq("empty")
	report(t, sink, q.batch(0, 1))
	s.checkDelivered(t, "conformance-empty", q.batch(0, 1))
}

// largeBatch is the most the metrics manager sends at once (256 reports)
// of a stream manager's size (100 metrics each).
func (s Suite) largeBatch(t spitest.T) {
	sink := s.open(t)
	q := newSeq("large")
	batch := q.batch(0, 256)
	for _, m := range batch {
		for j := range 97 {
			m.Metrics = append(m.Metrics, &egretpb.Metric{Name: fmt.Sprintf("stmgr.peer.%d.bytes", j), Value: float64(j)})
		}
	}
	report(t, sink, batch)
	s.checkDelivered(t, "conformance-large", batch)
}

// oddValues: names and values a sink must accept without failing the
// batch (escaping them is its business): a user counter with characters
// outside [a-z0-9._], a long name, zero, negative, huge and NaN values,
// and a report with an exception.
func (s Suite) oddValues(t spitest.T) {
	sink := s.open(t)
	q := newSeq("odd")
	m := q.report(0)
	m.Metrics = append(m.Metrics,
		&egretpb.Metric{Name: "user.wörds seen/sec", Value: 0},
		&egretpb.Metric{Name: "user." + strings.Repeat("x", 300), Value: -1},
		&egretpb.Metric{Name: "user.huge", Value: math.MaxFloat64},
		&egretpb.Metric{Name: "user.nan", Value: math.NaN()},
	)
	m.Exceptions = []*egretpb.ExceptionReport{{Message: "boom", Stack: "panic: boom\n\tmain.go:1", Count: 2}}
	batch := []*egretpb.MetricsPublish{m, q.report(1)}
	report(t, sink, batch)
	s.checkDelivered(t, "conformance-odd", batch)
}

func (s Suite) cancelledContext(t spitest.T) {
	sink := s.open(t)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	q := newSeq("cancelled")
	err := sink.Report(ctx, q.batch(0, 3))
	if err == nil || !errors.Is(err, context.Canceled) {
		t.Fatalf("Report with a cancelled context = %v, want an error wrapping context.Canceled", err)
	}
	// The sink still works afterwards.
	report(t, sink, q.batch(3, 1))
}

func (s Suite) closeIsIdempotent(t spitest.T) {
	sink := s.open(t)
	report(t, sink, newSeq("close").batch(0, 1))
	if err := sink.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := sink.Close(); err != nil {
		t.Fatalf("second Close: %v (Close must be idempotent)", err)
	}
}

func (s Suite) reportAfterClose(t spitest.T) {
	sink := s.open(t)
	if err := sink.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	ctx, cancel := opCtx(t)
	defer cancel()
	err := sink.Report(ctx, newSeq("after-close").batch(0, 1))
	if !errors.Is(err, spi.ErrClosed) {
		t.Fatalf("Report after Close = %v, want an error wrapping spi.ErrClosed", err)
	}
}
