package kafka

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"go.uber.org/zap"

	"github.com/egret-stream/egret/api"
	"github.com/egret-stream/egret/core/topology"
)

// BatchesState is the name of the effectively-once sink's state:
// checkpoint id → the records of the checkpoint interval that ended with
// it, not yet committed to Kafka.
const BatchesState = "kafka-sink-batches"

// CheckpointHeader is the header every record the effectively-once sink
// writes carries: the checkpoint id (decimal) its batch belongs to.
const CheckpointHeader = "egret-checkpoint"

// SinkConfig configures a Sink. Zero fields are read from the config keys
// named beside them.
type SinkConfig struct {
	// Brokers are the bootstrap brokers (KeyBrokers). Required.
	Brokers []string
	// Topic is the topic written to (KeyTopic). Required.
	Topic string
	// KeyField and ValueField name the input fields of the record key and
	// value (default "key" and "value"; a tuple without the key field
	// gives a record without a key). A []byte value is written as is, a
	// string as its bytes, nil as nil, anything else as fmt.Sprint of it.
	KeyField, ValueField string
	// MarkerTopic is the topic where the effectively-once sink commits,
	// in the same transaction as a batch, which checkpoint it wrote last
	// (KeyMarkerTopic, default DefaultMarkerTopic). The sink creates it
	// when missing: one partition, compacted.
	MarkerTopic string
	// TransactionalID is the prefix of the effectively-once sink's
	// transactional ids (KeyTransactionalID; default
	// "egret-<topology>-<component>"); task index i uses "<prefix>-<i>".
	// It must be stable across restarts of the topology and unique among
	// every producer of the cluster.
	TransactionalID string
	// ProduceTimeout bounds a record's delivery and a transaction
	// (KeyProduceTimeout, default 30s).
	ProduceTimeout time.Duration
	// ClientOptions are extra franz-go options (TLS, SASL, ...).
	ClientOptions []kgo.Opt
}

func (c *SinkConfig) resolve(ctx api.Context) error {
	if len(c.Brokers) == 0 {
		c.Brokers = list(setting(ctx, KeyBrokers))
	}
	if c.Topic == "" {
		c.Topic = setting(ctx, KeyTopic)
	}
	if c.KeyField == "" {
		c.KeyField = FieldKey
	}
	if c.ValueField == "" {
		c.ValueField = FieldValue
	}
	if c.MarkerTopic == "" {
		c.MarkerTopic = setting(ctx, KeyMarkerTopic)
	}
	if c.MarkerTopic == "" {
		c.MarkerTopic = DefaultMarkerTopic
	}
	if c.TransactionalID == "" {
		c.TransactionalID = setting(ctx, KeyTransactionalID)
	}
	if c.TransactionalID == "" {
		c.TransactionalID = "egret-" + ctx.TopologyName() + "-" + ctx.ComponentName()
	}
	if err := durationSetting(ctx, KeyProduceTimeout, &c.ProduceTimeout, DefaultProduceTimeout); err != nil {
		return err
	}
	if len(c.Brokers) == 0 {
		return fmt.Errorf("kafka: no brokers (SinkConfig.Brokers or %s)", KeyBrokers)
	}
	if c.Topic == "" {
		return fmt.Errorf("kafka: no topic (SinkConfig.Topic or %s)", KeyTopic)
	}
	return nil
}

// Rec is one record of a batch the effectively-once sink holds in its
// state.
type Rec struct {
	Key, Value []byte
}

// produced is the outcome of one at-least-once produce.
type produced struct {
	t   api.Tuple
	err error
}

// Sink writes its input tuples to a Kafka topic. See the package
// documentation for its guarantees per delivery mode.
type Sink struct {
	cfg  SinkConfig
	log  *zap.Logger
	out  api.BoltCollector
	mode topology.DeliveryMode
	cl   *kgo.Client // the producer (transactional in effectively-once mode)

	// at-least-once: produce outcomes, handed to the task goroutine by Pump.
	mu   sync.Mutex
	done []produced
	wake chan struct{}

	// effectively-once
	txnID         string
	batches       *api.State[int64, []Rec]
	buf           []Rec
	markerKnown   bool  // committedUpTo was read from Kafka by this client
	committedUpTo int64 // the last checkpoint whose batch is in Kafka

	written, failed, commits *api.Counter
}

// NewSink returns a sink factory for api.TopologyBuilder.SetBolt.
func NewSink(cfg SinkConfig) api.BoltFactory {
	return func() api.Bolt {
		c := cfg
		c.Brokers = slices.Clone(cfg.Brokers)
		return &Sink{cfg: c}
	}
}

// DeclareOutputFields implements api.Bolt: the sink emits nothing.
func (s *Sink) DeclareOutputFields(api.OutputDeclarer) {}

// Prepare implements api.Bolt.
func (s *Sink) Prepare(ctx api.Context, out api.BoltCollector) error {
	if err := s.cfg.resolve(ctx); err != nil {
		return err
	}
	s.out = out
	s.log = ctx.Logger().Named("kafka-sink")
	s.mode = ctx.Topology().DeliveryMode()
	s.wake = make(chan struct{}, 1)
	s.written, s.failed, s.commits = ctx.Counter("kafka.written"), ctx.Counter("kafka.failed"), ctx.Counter("kafka.commits")
	if s.mode != topology.EffectivelyOnce {
		cl, err := kgo.NewClient(s.opts(kgo.DefaultProduceTopic(s.cfg.Topic))...)
		if err != nil {
			return fmt.Errorf("kafka: sink client: %w", err)
		}
		s.cl = cl
		return nil
	}
	s.txnID = s.cfg.TransactionalID + "-" + strconv.Itoa(ctx.TaskIndex())
	return s.ensureMarkerTopic()
}

func (s *Sink) opts(extra ...kgo.Opt) []kgo.Opt {
	o := []kgo.Opt{kgo.SeedBrokers(s.cfg.Brokers...), kgo.WithLogger(zapLogger{s.log}), kgo.RecordDeliveryTimeout(s.cfg.ProduceTimeout)}
	return append(append(o, extra...), s.cfg.ClientOptions...)
}

// ensureMarkerTopic creates the marker topic when it does not exist.
func (s *Sink) ensureMarkerTopic() error {
	cl, err := kgo.NewClient(s.opts()...)
	if err != nil {
		return fmt.Errorf("kafka: admin client: %w", err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), s.cfg.ProduceTimeout)
	defer cancel()
	compact := "compact"
	resp, err := kadm.NewClient(cl).CreateTopic(ctx, 1, -1, map[string]*string{"cleanup.policy": &compact}, s.cfg.MarkerTopic)
	if err == nil {
		err = resp.Err
	}
	if err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
		return fmt.Errorf("kafka: create the marker topic %s: %w", s.cfg.MarkerTopic, err)
	}
	return nil
}

func (s *Sink) record(t api.Tuple) (*kgo.Record, error) {
	vi := t.FieldIndex(s.cfg.ValueField)
	if vi < 0 {
		return nil, fmt.Errorf("kafka: sink input from %s/%s has no field %q (fields %v)", t.SourceComponent(), t.SourceStream(), s.cfg.ValueField, t.Fields())
	}
	r := &kgo.Record{Topic: s.cfg.Topic, Value: toBytes(t.Value(vi))}
	if ki := t.FieldIndex(s.cfg.KeyField); ki >= 0 {
		r.Key = toBytes(t.Value(ki))
	}
	return r, nil
}

func toBytes(v any) []byte {
	switch v := v.(type) {
	case nil:
		return nil
	case []byte:
		return v
	case string:
		return []byte(v)
	default:
		return []byte(fmt.Sprint(v))
	}
}

// Execute implements api.Bolt.
func (s *Sink) Execute(t api.Tuple) {
	if t.IsTick() {
		return
	}
	r, err := s.record(t)
	if err != nil {
		s.out.ReportError(err)
		s.out.Fail(t)
		return
	}
	switch s.mode {
	case topology.EffectivelyOnce:
		s.buf = append(s.buf, Rec{Key: r.Key, Value: r.Value})
		s.out.Ack(t)
	case topology.AtLeastOnce:
		s.cl.Produce(context.Background(), r, func(_ *kgo.Record, err error) {
			s.mu.Lock()
			s.done = append(s.done, produced{t, err})
			s.mu.Unlock()
			select {
			case s.wake <- struct{}{}:
			default:
			}
		})
	default:
		s.cl.Produce(context.Background(), r, func(_ *kgo.Record, err error) {
			if err != nil {
				s.failed.Inc()
				s.log.Warn("produce failed (at-most-once: dropped)", zap.Error(err))
			} else {
				s.written.Inc()
			}
		})
		s.out.Ack(t)
	}
}

// Wake implements api.Pumper: it has a value when produces completed.
func (s *Sink) Wake() <-chan struct{} { return s.wake }

// Pump implements api.Pumper: it acks every tuple whose record the broker
// acknowledged and fails those whose produce failed.
func (s *Sink) Pump() {
	s.mu.Lock()
	done := s.done
	s.done = nil
	s.mu.Unlock()
	for _, d := range done {
		if d.err != nil {
			s.failed.Inc()
			s.log.Warn("produce failed; failing the tuple", zap.Error(d.err))
			s.out.Fail(d.t)
			continue
		}
		s.written.Inc()
		s.out.Ack(d.t)
	}
}

// Cleanup implements api.Bolt: it waits (up to ProduceTimeout) for the
// records in flight, acks them, and closes the clients. Batches of the
// effectively-once sink not yet committed stay in its state.
func (s *Sink) Cleanup() {
	if s.cl != nil && s.mode != topology.EffectivelyOnce {
		ctx, cancel := context.WithTimeout(context.Background(), s.cfg.ProduceTimeout)
		if err := s.cl.Flush(ctx); err != nil {
			s.log.Warn("flush at cleanup", zap.Error(err))
		}
		cancel()
		s.Pump()
	}
	s.closeClients()
}

func (s *Sink) closeClients() {
	if s.cl != nil {
		s.cl.Close()
		s.cl = nil
	}
}

// InitState implements api.Stateful: it binds the batches state and
// forgets the records buffered since the last checkpoint (the topology
// replays them after a rollback).
func (s *Sink) InitState(states *api.States) error {
	st, err := api.NewState[int64, []Rec](states, BatchesState)
	if err != nil {
		return fmt.Errorf("kafka: sink state: %w", err)
	}
	s.batches = st
	s.buf = nil
	s.markerKnown = false
	return nil
}

// PreSave implements api.Stateful: the records of the interval ending
// with checkpoint become that checkpoint's batch in the state.
func (s *Sink) PreSave(checkpoint int64) error {
	if len(s.buf) > 0 {
		s.batches.Put(checkpoint, s.buf)
		s.buf = nil
	}
	return nil
}

// CheckpointComplete implements api.CheckpointListener: it writes the
// batches of every checkpoint ≤ checkpoint not yet in Kafka in one
// transaction, with the marker of the last one, and drops them from the
// state. Batches already in Kafka (the marker says so) are dropped
// without writing. On an error the batches stay and the next
// CheckpointComplete tries again.
func (s *Sink) CheckpointComplete(checkpoint int64) {
	if s.batches == nil {
		return
	}
	var ids []int64
	s.batches.Range(func(id int64, _ []Rec) bool {
		if id <= checkpoint {
			ids = append(ids, id)
		}
		return true
	})
	if len(ids) == 0 {
		return
	}
	slices.Sort(ids)
	if err := s.commit(ids); err != nil {
		s.closeClients() // a fresh client fences and aborts what this one left open
		s.markerKnown = false
		err = fmt.Errorf("kafka: sink: commit checkpoints %v to %s: %w (retried at the next checkpoint)", ids, s.cfg.Topic, err)
		s.log.Warn("commit failed", zap.Error(err))
		s.out.ReportError(err)
	}
}

func (s *Sink) commit(ids []int64) error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*s.cfg.ProduceTimeout)
	defer cancel()
	if s.cl == nil {
		cl, err := kgo.NewClient(s.opts(
			kgo.TransactionalID(s.txnID),
			kgo.TransactionTimeout(2*s.cfg.ProduceTimeout),
			kgo.RecordPartitioner(markerPartitioner{marker: s.cfg.MarkerTopic, data: kgo.UniformBytesPartitioner(64<<10, true, true, nil)}),
		)...)
		if err != nil {
			return fmt.Errorf("transactional client: %w", err)
		}
		s.cl = cl
	}
	if !s.markerKnown {
		// Initialising the producer id fences any earlier producer of
		// this transactional id and aborts its open transaction, so the
		// marker read next is final.
		if _, _, err := s.cl.ProducerID(ctx); err != nil {
			return fmt.Errorf("init producer id %s: %w", s.txnID, err)
		}
		upTo, err := s.readMarker(ctx)
		if err != nil {
			return err
		}
		s.committedUpTo, s.markerKnown = upTo, true
		s.log.Info("marker read", zap.String("transactional.id", s.txnID), zap.Int64("committed.checkpoint", upTo))
	}
	var todo []int64
	for _, id := range ids {
		if id <= s.committedUpTo {
			s.batches.Delete(id) // written before a crash or rollback
		} else {
			todo = append(todo, id)
		}
	}
	if len(todo) == 0 {
		return nil
	}
	if err := s.cl.BeginTransaction(); err != nil {
		return fmt.Errorf("begin transaction: %w", err)
	}
	var (
		perr error
		pmu  sync.Mutex
	)
	promise := func(_ *kgo.Record, err error) {
		if err != nil {
			pmu.Lock()
			perr = errors.Join(perr, err)
			pmu.Unlock()
		}
	}
	n := 0
	for _, id := range todo {
		h := []kgo.RecordHeader{{Key: CheckpointHeader, Value: []byte(strconv.FormatInt(id, 10))}}
		recs, _ := s.batches.Get(id)
		for _, r := range recs {
			s.cl.Produce(ctx, &kgo.Record{Topic: s.cfg.Topic, Key: r.Key, Value: r.Value, Headers: h}, promise)
			n++
		}
	}
	last := todo[len(todo)-1]
	s.cl.Produce(ctx, &kgo.Record{Topic: s.cfg.MarkerTopic, Partition: 0, Key: []byte(s.txnID), Value: []byte(strconv.FormatInt(last, 10))}, promise)
	err := s.cl.Flush(ctx)
	pmu.Lock()
	err = errors.Join(err, perr)
	pmu.Unlock()
	if err != nil {
		_ = s.cl.EndTransaction(ctx, kgo.TryAbort)
		return fmt.Errorf("produce: %w", err)
	}
	if err := s.cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
		return fmt.Errorf("commit transaction: %w", err)
	}
	for _, id := range todo {
		s.batches.Delete(id)
	}
	s.committedUpTo = last
	s.written.Add(int64(n))
	s.commits.Inc()
	return nil
}

// readMarker returns the last checkpoint this task's transactional id
// committed (-1 when none): it writes a probe record to the marker
// partition and reads the partition, read_committed, up to the probe.
func (s *Sink) readMarker(ctx context.Context) (int64, error) {
	probeKey := []byte(s.txnID + "/probe")
	p, err := kgo.NewClient(s.opts(kgo.RecordPartitioner(kgo.ManualPartitioner()))...)
	if err != nil {
		return 0, fmt.Errorf("marker probe client: %w", err)
	}
	res := p.ProduceSync(ctx, &kgo.Record{Topic: s.cfg.MarkerTopic, Partition: 0, Key: probeKey})
	p.Close()
	probe, err := res.First()
	if err != nil {
		return 0, fmt.Errorf("marker probe to %s: %w", s.cfg.MarkerTopic, err)
	}
	reader, err := kgo.NewClient(s.opts(
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{s.cfg.MarkerTopic: {0: kgo.NewOffset().AtStart()}}),
	)...)
	if err != nil {
		return 0, fmt.Errorf("marker reader: %w", err)
	}
	defer reader.Close()
	upTo := int64(-1)
	for {
		fs := reader.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return 0, fmt.Errorf("read the marker of %s from %s: %w", s.txnID, s.cfg.MarkerTopic, err)
		}
		var ferr error
		fs.EachError(func(_ string, _ int32, err error) { ferr = err })
		if ferr != nil && !kerr.IsRetriable(ferr) {
			return 0, fmt.Errorf("read the marker of %s: %w", s.txnID, ferr)
		}
		reached := false
		fs.EachRecord(func(r *kgo.Record) {
			if string(r.Key) == s.txnID {
				if id, err := strconv.ParseInt(string(r.Value), 10, 64); err == nil && id > upTo {
					upTo = id
				}
			}
			if r.Offset >= probe.Offset {
				reached = true
			}
		})
		if reached {
			return upTo, nil
		}
	}
}

// markerPartitioner writes the marker topic's records to the partition
// they name (0) and partitions the data like franz-go's default.
type markerPartitioner struct {
	marker string
	data   kgo.Partitioner
}

func (p markerPartitioner) ForTopic(t string) kgo.TopicPartitioner {
	if t == p.marker {
		return kgo.ManualPartitioner().ForTopic(t)
	}
	return p.data.ForTopic(t)
}
