package kafka

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"go.uber.org/zap"

	"github.com/egret-stream/egret/api"
	"github.com/egret-stream/egret/core/topology"
)

// TransactionsState is the name of the effectively-once sink's state:
// transactional id → the Kafka transaction prepared under it at a
// checkpoint barrier and not yet committed (PreparedTxn). Keyed by
// transactional id, the states of several tasks merge without a clash: a
// task restored with the union of every task's states (a restore with
// another parallelism) commits every transaction they name.
const TransactionsState = "kafka-sink-transactions"

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
	// TransactionalID is the prefix of the effectively-once sink's
	// transactional ids (KeyTransactionalID; default
	// "egret-<topology>-<component>"): task index i uses the ids
	// "<prefix>-<i>-<slot>", slot 0..TransactionSlots-1. It must be
	// stable across restarts of the topology and unique among every
	// producer of the cluster.
	TransactionalID string
	// TransactionSlots is the number of transactional ids each task
	// cycles through (KeyTransactionSlots, default 5): one for the open
	// transaction, the others for transactions prepared at checkpoints
	// and not yet known to be final. Every restore fences all of them.
	TransactionSlots int
	// TransactionTimeout is the producer's transaction timeout
	// (KeyTransactionTimeout, default 5m): the broker aborts a
	// transaction open longer. It must exceed the checkpoint interval
	// plus the time a checkpoint takes to complete plus the time a
	// recovery takes, and not exceed the brokers'
	// transaction.max.timeout.ms (15m by default).
	TransactionTimeout time.Duration
	// ProduceTimeout bounds a record's delivery outside effectively-once
	// mode, and the flush at a checkpoint barrier and each transaction
	// commit in it (KeyProduceTimeout, default 30s).
	ProduceTimeout time.Duration
	// MaxBufferedBytes bounds the bytes of records produced and not yet
	// acknowledged by the brokers (KeyMaxBufferedBytes, default 32 MiB):
	// Execute waits for room beyond it.
	MaxBufferedBytes int64
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
	if c.TransactionalID == "" {
		c.TransactionalID = setting(ctx, KeyTransactionalID)
	}
	if c.TransactionalID == "" {
		c.TransactionalID = "egret-" + ctx.TopologyName() + "-" + ctx.ComponentName()
	}
	if err := durationSetting(ctx, KeyProduceTimeout, &c.ProduceTimeout, DefaultProduceTimeout); err != nil {
		return err
	}
	if err := durationSetting(ctx, KeyTransactionTimeout, &c.TransactionTimeout, DefaultTransactionTimeout); err != nil {
		return err
	}
	if err := intSetting(ctx, KeyTransactionSlots, &c.TransactionSlots, DefaultTransactionSlots, 2); err != nil {
		return err
	}
	if c.MaxBufferedBytes <= 0 {
		c.MaxBufferedBytes = DefaultMaxBufferedBytes
		if v := setting(ctx, KeyMaxBufferedBytes); v != "" {
			n, err := topology.ParseBytes(v)
			if err != nil || n <= 0 {
				return fmt.Errorf("kafka: %s: %q is not a positive size (for example 32MiB)", KeyMaxBufferedBytes, v)
			}
			c.MaxBufferedBytes = n
		}
	}
	if len(c.Brokers) == 0 {
		return fmt.Errorf("kafka: no brokers (SinkConfig.Brokers or %s)", KeyBrokers)
	}
	if c.Topic == "" {
		return fmt.Errorf("kafka: no topic (SinkConfig.Topic or %s)", KeyTopic)
	}
	return nil
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
	cl   *kgo.Client // the producer (at-least-once, at-most-once)

	// at-least-once: produce outcomes, handed to the task goroutine by Pump.
	mu   sync.Mutex
	done []produced
	wake chan struct{}

	tx *txnWriter // effectively-once

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
	tx, err := newTxnWriter(s, ctx.TaskIndex())
	if err != nil {
		return err
	}
	s.tx = tx
	return nil
}

// opts are the franz-go options of every client of the sink.
func (s *Sink) opts(extra ...kgo.Opt) []kgo.Opt {
	o := []kgo.Opt{kgo.SeedBrokers(s.cfg.Brokers...), kgo.WithLogger(zapLogger{s.log}), kgo.MaxBufferedBytes(int(s.cfg.MaxBufferedBytes))}
	if s.mode != topology.EffectivelyOnce {
		o = append(o, kgo.RecordDeliveryTimeout(s.cfg.ProduceTimeout))
	}
	return append(append(o, extra...), s.cfg.ClientOptions...)
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
		s.tx.produce(r)
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
// records in flight, acks them, and closes the client. The
// effectively-once sink aborts its open transaction (its records come
// after the last checkpoint and are replayed) and leaves the prepared
// ones to CheckpointComplete after the restart.
func (s *Sink) Cleanup() {
	if s.tx != nil {
		s.tx.close()
		return
	}
	if s.cl != nil {
		ctx, cancel := context.WithTimeout(context.Background(), s.cfg.ProduceTimeout)
		if err := s.cl.Flush(ctx); err != nil {
			s.log.Warn("flush at cleanup", zap.Error(err))
		}
		cancel()
		s.Pump()
		s.cl.Close()
		s.cl = nil
	}
}
