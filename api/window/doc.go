// Package window adds windows to Egret topologies: tumbling and sliding
// windows by time or by count, session windows and global windows with a
// custom trigger, over processing, ingestion or event time, with
// watermarks, allowed lateness, a late side output and early firing.
//
// A window bolt (SetBolt, Bolt) is an ordinary api.Bolt, so packing,
// acking, back pressure, metrics and scaling apply to it. It aggregates
// incrementally by default: an AggregateFunc (Init, Add, Merge, Result)
// keeps one accumulator per window and key, so memory grows with keys ×
// open windows, not with elements. Process is the opt-in full-window
// function that keeps every element.
//
//	wb := window.NewBuilder(api.NewTopologyBuilder("clicks"))
//	wb.SetSpout("clicks", newClickSpout, 2, window.SpoutWatermarks{
//		Timestamp: func(_ string, v api.Values) time.Time { return v[1].(time.Time) },
//		Generator: func() window.Generator { return window.BoundedOutOfOrderness(2 * time.Second) },
//	})
//	window.SetBolt(wb, "per-user", 4, window.Spec[string, int64, int64, int64]{
//		Assigner:        window.Tumbling(10 * time.Second),
//		Key:             func(t api.Tuple) string { return t.String(0) },
//		Value:           func(api.Tuple) int64 { return 1 },
//		Timestamp:       func(t api.Tuple) time.Time { return t.Time(1) },
//		Aggregate:       window.Sum[int64](),
//		AllowedLateness: 5 * time.Second,
//		LateStream:      true,
//	}).FieldsGrouping("clicks", "user")
//
// # Watermarks
//
// Watermarks travel in-band, as tuples on WatermarkStream, without any
// change to the stream managers: every task of a watermark-aware
// component emits its watermark to every task downstream (the Builder
// declares the all-grouping subscriptions), and a task's watermark is the
// minimum over its input tasks. An input task that sent nothing for the
// idle timeout is marked idle and left out of the minimum until it sends
// again. Spouts become watermark sources with Builder.SetSpout (periodic
// or per-record emission from a Generator such as BoundedOutOfOrderness);
// plain bolts forward watermarks with Builder.SetBolt; a window bolt over
// inputs that send no watermarks generates them itself (Spec.Watermark).
// Each window bolt publishes its watermark (Unix ms) as the user counter
// "window.watermark"; it also counts late, final, partial and updated
// results, unanchored inputs and idle marks.
//
// # Time
//
// A time window [start, end) fires when the watermark reaches end-1. An
// element is late when every window it belongs to has end-1 +
// AllowedLateness <= watermark: it is dropped (LateStream emits it). An
// element for a window that already fired but is within the allowed
// lateness is added and the window emits an Update. Early firing emits
// Partial results every EarlyCount elements or EarlyInterval; the result
// at the close is Final.
//
// # Guarantees
//
// With AnchorResults (the default) a window holds its inputs (references
// to received tuples, not copies, at most MaxAnchors per task) until it
// emits its final result anchored to them, then acks them: at-least-once
// across a crash of the window bolt, provided the spouts' message timeout
// exceeds the window length plus the lateness plus the watermark delay
// (otherwise tuples time out and are replayed while their window is open,
// and the results count them twice). Held inputs also count against
// max.spout.pending: a topology whose windows hold more elements than
// the spouts may have pending stalls until the message timeout. With
// AckOnAdd inputs are acked at once and results are unanchored:
// at-most-once for window state.
//
// Under effectively-once a window bolt is exact: it is api.Stateful, and
// its open windows with their accumulators and firing bookkeeping, its
// watermark and its inputs' watermarks are in the task's checkpointed
// state (the windows' timers are derived from them on restore), so a
// rollback never adds a replayed element twice, open windows survive any
// failure, and late elements are judged against the restored watermark.
// WatermarkSpout and ForwardingBolt checkpoint their watermarks and pass
// the wrapped component's states through. With a state backend each
// key's windows are keyed state under the window key, with a keyed
// event-time timer at their earliest time, so only changed keys are
// written at a checkpoint and idle keys leave memory; otherwise (and for
// global windows and EarlyInterval) they are an operator state. The state
// is about 32 to 42 bytes per open window and key with an int64
// accumulator (Process keeps the elements), plus one watermark per input
// task; keys and accumulators are encoded with the state's default
// serializer (api.DefaultSerializer).
package window
