package api

import (
	"go.uber.org/zap"

	"github.com/egret-stream/egret/core/topology"
)

// Values is an ordered list of tuple values. Supported value types are
// those of package core/tuple: nil, bool, signed and unsigned integers,
// float32/64, string, []byte, time.Time, time.Duration, []any,
// map[string]any, and user types with a codec registered through
// TopologyBuilder.RegisterType.
type Values []any

// Spout is a source of tuples.
//
// The runtime calls every method from one goroutine, so a spout needs no
// locking for its own state. NextTuple must not block: it emits zero or
// more tuples and returns; when it emits nothing the runtime backs off so an
// idle spout does not spin a core.
type Spout interface {
	// Open is called once before any other call except
	// DeclareOutputFields.
	Open(ctx Context, out SpoutCollector) error
	// NextTuple asks the spout to emit tuples.
	NextTuple()
	// Ack reports that the tuple tree of msgID was fully processed
	// (at-least-once mode only).
	Ack(msgID any)
	// Fail reports that the tuple tree of msgID failed or timed out; a
	// reliable spout replays it.
	Fail(msgID any)
	// Activate and Deactivate are called when the topology is activated or
	// deactivated; NextTuple is not called while deactivated.
	Activate()
	Deactivate()
	// Close is called when the instance shuts down gracefully.
	Close()
	// DeclareOutputFields declares the streams the spout emits to.
	DeclareOutputFields(d OutputDeclarer)
}

// Bolt consumes tuples and may emit new ones.
//
// Execute is called from one goroutine per task. In at-least-once mode a
// bolt must Ack or Fail every tuple it receives (BasicBolt does it for you).
type Bolt interface {
	// Prepare is called once before the first Execute.
	Prepare(ctx Context, out BoltCollector) error
	// Execute processes one tuple.
	Execute(t Tuple)
	// Cleanup is called when the instance shuts down gracefully.
	Cleanup()
	// DeclareOutputFields declares the streams the bolt emits to.
	DeclareOutputFields(d OutputDeclarer)
}

// SpoutCollector emits a spout's tuples.
//
// An emit encodes the values before it returns and keeps neither the
// Values slice nor anything its values reference (a []byte is copied), so
// a spout may reuse one Values slice, and the buffers in it, for every
// emit: a slice allocated per tuple is often its largest cost. The same
// holds for BoltCollector's values and anchors.
type SpoutCollector interface {
	// Emit emits values on the default stream. A non-nil msgID makes the
	// tuple tracked in at-least-once mode: the spout later gets Ack(msgID)
	// or Fail(msgID). msgID stays in the spout's process and may be any
	// value.
	Emit(values Values, msgID any)
	// EmitStream emits values on the named stream.
	EmitStream(stream string, values Values, msgID any)
	// EmitDirect emits values to one task of a direct stream.
	EmitDirect(task int, stream string, values Values, msgID any)
	// ReportError reports an error to the topology manager (shown by the
	// tracker) without stopping the spout.
	ReportError(err error)
}

// BoltCollector emits a bolt's tuples and acknowledges its inputs.
//
// Like SpoutCollector's, an emit keeps neither its Values slice nor its
// anchors slice: a bolt may reuse both (b.out.Emit(b.vals, b.anchor[:]...)
// with an array of one anchor allocates nothing for the anchors).
type BoltCollector interface {
	// Emit emits values on the default stream, anchored to anchors: in
	// at-least-once mode the new tuple joins the tuple trees of every
	// anchor. Pass no anchors for an unanchored tuple.
	Emit(values Values, anchors ...Tuple)
	// EmitStream emits values on the named stream.
	EmitStream(stream string, values Values, anchors ...Tuple)
	// EmitDirect emits values to one task of a direct stream.
	EmitDirect(task int, stream string, values Values, anchors ...Tuple)
	// Ack marks t as processed.
	Ack(t Tuple)
	// Fail marks t as failed: its spout tuple fails at once.
	Fail(t Tuple)
	// ReportError reports an error to the topology manager.
	ReportError(err error)
}

// OutputDeclarer declares a component's output streams.
type OutputDeclarer interface {
	// Declare declares the default stream with the given fields.
	Declare(fields ...string)
	// DeclareStream declares a named stream.
	DeclareStream(stream string, fields ...string)
	// DeclareDirectStream declares a named stream whose tuples are sent
	// with EmitDirect to a chosen task.
	DeclareDirectStream(stream string, fields ...string)
}

// Context describes the running instance to its component.
type Context interface {
	TopologyName() string
	TopologyID() string
	ComponentName() string
	// TaskID is the topology-wide id of this task.
	TaskID() int
	// TaskIndex is this task's index among its component's tasks (0-based).
	TaskIndex() int
	// ComponentTasks returns the task ids of a component, ascending.
	ComponentTasks(component string) []int
	// Config returns a setting: the component's value, else the
	// topology's, else "".
	Config(key string) string
	// Logger is the instance's structured logger.
	Logger() *zap.Logger
	// Counter returns the user counter with the given name; it is
	// reported with the instance's metrics.
	Counter(name string) *Counter
	// Topology is the running topology's logical plan (read only).
	Topology() *topology.Topology
	// ResourcesDir is the directory of the files shipped with the
	// topology (egret submit --resources): the package's resources/
	// directory in a container, --resources with --local.
	ResourcesDir() string
}

// Reconfigurable is implemented by a spout or bolt that takes changes of
// its user settings while it runs (egret update --runtime-config with keys
// that do not start with "topology."). Reconfigure gets the settings that
// changed, a deleted one with an empty value; it runs on the task's
// goroutine, between calls of NextTuple or Execute. A component that does
// not implement it sees the new values when it is next started.
type Reconfigurable interface {
	Reconfigure(changed map[string]string)
}

// Pumper is implemented by a bolt that gets work outside the calls the
// runtime makes, such as a shell bolt whose subprocess emits and acks on
// its own schedule. Whenever Wake has a value, the runtime calls Pump on
// the task's goroutine, where the bolt may use its collector.
type Pumper interface {
	Wake() <-chan struct{}
	Pump()
}

// Syncer is implemented by a bolt that holds tuples outside its Execute
// calls, such as a shell bolt whose subprocess processes the tuples given
// to it on its own schedule. Sync, called on the task's goroutine, returns
// once every tuple given to Execute before the call has been processed and
// what it emitted, acked and failed handed to the collector. A drain calls
// it so that no tuple queued toward or inside a subprocess is lost.
type Syncer interface {
	Sync()
}

// Holder is implemented by a Syncer that can tell how many tuples it
// holds outside Execute: given to it and neither acked nor failed yet (a
// shell bolt: the tuples its subprocess has not finished). Called on the
// task's goroutine; the instance publishes it (instance.held.tuples), and
// a running cluster's drain waits until no task holds any.
type Holder interface {
	Held() int
}

// TupleReuser is implemented by a bolt that keeps no tuple past Execute.
// When ReuseTuples returns true (it is asked once, when the task starts),
// the runtime passes the same Tuple to every Execute, filled with the next
// received tuple, and reads its values from the received batch instead of
// copying them: no allocation per received tuple (Flink's object reuse).
//
// The bolt promises, for every t passed to Execute, that it acks or fails
// t before Execute returns, and that nothing uses t after that: no read,
// no anchoring, no Ack or Fail, also not from another goroutine. Values
// read from t stay valid (strings, numbers, the []byte of Bytes or
// Values, the slice of Values). A tracked tuple that is neither acked nor
// failed when Execute returns is failed by the runtime, so its spout
// replays it, and reported as an error of the component. A bolt that
// keeps tuples (windows, joins, asynchronous acks) must not implement it.
type TupleReuser interface {
	ReuseTuples() bool
}

// SpoutTaskEmitter is implemented by the runtime's spout collector:
// EmitTasks emits like EmitStream and returns the ids of the tasks the
// tuple was sent to (Storm's emit return value; none when it was
// dropped).
type SpoutTaskEmitter interface {
	EmitTasks(stream string, values Values, msgID any) []int
}

// BoltTaskEmitter is implemented by the runtime's bolt collector:
// EmitTasks emits like EmitStream and returns the ids of the tasks the
// tuple was sent to.
type BoltTaskEmitter interface {
	EmitTasks(stream string, values Values, anchors ...Tuple) []int
}

// Factories build a fresh component in every process that runs one of its
// tasks.
type (
	SpoutFactory func() Spout
	BoltFactory  func() Bolt
)

// BaseSpout gives no-op defaults for a spout's optional methods; embed it.
type BaseSpout struct{}

// Open does nothing.
func (BaseSpout) Open(Context, SpoutCollector) error { return nil }

// Ack does nothing.
func (BaseSpout) Ack(any) {}

// Fail does nothing.
func (BaseSpout) Fail(any) {}

// Activate does nothing.
func (BaseSpout) Activate() {}

// Deactivate does nothing.
func (BaseSpout) Deactivate() {}

// Close does nothing.
func (BaseSpout) Close() {}

// BaseBolt gives no-op defaults for a bolt's optional methods; embed it.
type BaseBolt struct{}

// Prepare does nothing.
func (BaseBolt) Prepare(Context, BoltCollector) error { return nil }

// Cleanup does nothing.
func (BaseBolt) Cleanup() {}
