// Package streamlet is Egret's functional API: a typed, generic pipeline
// builder that compiles to an ordinary topology of spouts and bolts.
//
//	b := streamlet.New("wordcount")
//	lines := streamlet.Source(b, "lines", newLineSupplier).Parallelism(2)
//	words := streamlet.FlatMap(lines, strings.Fields).Named("split")
//	counts := streamlet.ReduceByKeyAndWindow(
//		streamlet.KeyBy(words, func(w string) string { return w }).Parallelism(2),
//		streamlet.WindowConfig{Assigner: window.Tumbling(10 * time.Second)},
//		nil, window.Count[string]())
//	streamlet.Consume(counts, func(r streamlet.Windowed[string, int64]) { ... })
//	tb, err := b.Compile() // an *api.TopologyBuilder: runner.Main(tb)
//
// Stages are Source, Map, FlatMap, Filter, KeyBy, Union, Clone,
// Transform, Repartition, ReduceByKeyAndWindow, Join (inner, left, right,
// full outer within a window), ToSink, Consume and Log. Types are checked
// by the Go compiler: Map of a Streamlet[string] with a func(int) int
// does not compile. Each stage has a name (Named; default "<kind>-<n>")
// and a parallelism (default its input's; 1 for sources and windows).
//
// # Components and fusing
//
// Compile fuses a stage into its input's component (operator chaining)
// when the stage is stateless or per-task (map, flat map, filter,
// transform, key by, sinks), its input has no other consumer, both have
// the same parallelism and nothing repartitions between them (a terminal
// stage is not fused into a source: the runtime backs off a spout that
// emits nothing); the
// component is named after its stages joined by "_" (for example
// "lines_split"). Elements pass between fused stages as Go values,
// without encoding. Separate on a stage, or DisableFusing on the Builder,
// keeps stages in their own components. Key-by output is fields-grouped
// on its key; Repartition uses a custom grouping; everything else is
// shuffled. Windows and joins compile to window bolts (package window).
//
// # Encoding of T
//
// Between components every element is one tuple: a stage's output is the
// single field "value", a key-by stage's output the fields "key" and
// "value". A value of type T goes into the tuple as it is, so T (and K)
// must be a type the tuple codec encodes: nil, bool, the sized and
// unsized integers, float32/64, string, []byte, time.Time,
// time.Duration, []any and map[string]any — exactly those types, not
// named types defined on them — or a user type registered with
// Builder.RegisterType (JSONCodec encodes any JSON-able type). Window
// results (Windowed[K, V]) are encoded as a list [key, start, end, value,
// firing]; a join's results for one window and key as one list of
// values. Types are only checked when a value crosses a process: an
// unregistered type fails at run time with the codec's error.
//
// # Guarantees
//
// Sources emit untracked tuples (a supplier cannot replay), so a
// streamlet topology is at-most-once from its sources on even in
// at-least-once mode; bolts still anchor and ack, so back pressure and
// metrics apply. Windows follow package window (incremental aggregates,
// one accumulator per key and window). Join keeps every element of its
// open windows. Under effectively-once windows and joins are exact (their
// window bolts and watermark generators are checkpointed); sources and
// Transform stages are refused at submit, since neither a Supplier's
// position nor a Transformer's state can be checkpointed.
//
// # Event time
//
// With WindowConfig.Time set to window.EventTime, the component that
// emits a window's keyed input applies the window's timestamp function
// to every element it emits, keeps a bounded-out-of-orderness watermark
// (WindowConfig.MaxDelay) per task and sends it in-band, at most every
// 20 ms, on window.WatermarkStream to every task of the window (an all
// grouping Compile declares). A window task's watermark is the minimum
// over those producer tasks, idle ones left out after
// WindowConfig.IdleTimeout (default 10s). Windows stay open while their
// producers are silent and not yet idle.
package streamlet
