package kafka

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"github.com/egret-stream/egret/api"
	"github.com/egret-stream/egret/core/topology"
)

// Output fields of the spout, in this order.
const (
	FieldKey       = "key"       // []byte, nil when the record has no key
	FieldValue     = "value"     // []byte, nil for a tombstone
	FieldTopic     = "topic"     // string
	FieldPartition = "partition" // int32
	FieldOffset    = "offset"    // int64
	FieldTimestamp = "timestamp" // time.Time, the record's timestamp
)

// Fields are the spout's output fields.
var Fields = []string{FieldKey, FieldValue, FieldTopic, FieldPartition, FieldOffset, FieldTimestamp}

// PositionsState is the name of the effectively-once spout's state: topic
// "/" partition → the offset of the next record to emit.
const PositionsState = "kafka-spout-positions"

// SpoutConfig configures a Spout. Zero fields are read from the config
// keys named beside them.
type SpoutConfig struct {
	// Brokers are the bootstrap brokers (KeyBrokers). Required.
	Brokers []string
	// Topics are the topics to read (KeyTopics). Required.
	Topics []string
	// Group is the consumer group (KeyGroup). In at-least-once and
	// at-most-once mode a spout with a group joins it: the group assigns
	// the partitions to the spout's tasks and keeps the committed
	// offsets. Without a group, and always in effectively-once mode, the
	// partitions are assigned manually: the sorted (topic, partition)
	// list is dealt round-robin to the component's tasks by task index,
	// and nothing is committed to Kafka.
	Group string
	// Partitions, when set, restricts a manual assignment to these
	// partitions of the topics (topic → partitions); they are dealt over
	// the tasks as the full list would be. Not used with a group.
	Partitions map[string][]int32
	// StartOffset is where a partition without a committed or saved
	// position starts: "earliest" (default) or "latest" (KeyStartOffset).
	StartOffset string
	// ReadUncommitted makes the spout read records of open and aborted
	// transactions too (KeyReadUncommitted); by default it reads
	// read_committed.
	ReadUncommitted bool
	// CommitInterval is the interval of offset commits in at-least-once
	// and at-most-once mode (KeyCommitInterval, default 1s).
	CommitInterval time.Duration
	// MaxPollRecords bounds the records one NextTuple emits
	// (KeyMaxPollRecords, default 500).
	MaxPollRecords int
	// ClientOptions are extra franz-go options (TLS, SASL, ...).
	ClientOptions []kgo.Opt
}

func (c *SpoutConfig) resolve(ctx api.Context) error {
	if len(c.Brokers) == 0 {
		c.Brokers = list(setting(ctx, KeyBrokers))
	}
	if len(c.Topics) == 0 {
		c.Topics = list(setting(ctx, KeyTopics))
	}
	if c.Group == "" {
		c.Group = setting(ctx, KeyGroup)
	}
	if c.StartOffset == "" {
		c.StartOffset = setting(ctx, KeyStartOffset)
	}
	if _, err := startOffset(c.StartOffset); err != nil {
		return err
	}
	if err := boolSetting(ctx, KeyReadUncommitted, &c.ReadUncommitted); err != nil {
		return err
	}
	if err := durationSetting(ctx, KeyCommitInterval, &c.CommitInterval, DefaultCommitInterval); err != nil {
		return err
	}
	if c.MaxPollRecords <= 0 {
		c.MaxPollRecords = DefaultMaxPollRecords
		if v := setting(ctx, KeyMaxPollRecords); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n <= 0 {
				return fmt.Errorf("kafka: %s: %q is not a positive number", KeyMaxPollRecords, v)
			}
			c.MaxPollRecords = n
		}
	}
	if len(c.Brokers) == 0 {
		return fmt.Errorf("kafka: no brokers (SpoutConfig.Brokers or %s)", KeyBrokers)
	}
	if len(c.Topics) == 0 {
		return fmt.Errorf("kafka: no topics (SpoutConfig.Topics or %s)", KeyTopics)
	}
	return nil
}

// MsgID is the message id of a record the spout emitted in at-least-once
// mode.
type MsgID struct {
	Topic     string
	Partition int32
	Offset    int64
	epoch     uint64 // the assignment the record was emitted under
}

type topicPartition struct {
	topic     string
	partition int32
}

func (tp topicPartition) key() string { return tp.topic + "/" + strconv.Itoa(int(tp.partition)) }

// partState is the spout's view of one assigned partition.
type partState struct {
	epoch uint64
	// next is the offset after the last emitted record (-1 before the
	// first).
	next int64
	// inflight holds the emitted, not yet acked records (at-least-once);
	// order their offsets, ascending, with acked ones trimmed from the
	// front.
	inflight map[int64]*kgo.Record
	order    []int64
	// committed is the last offset committed to the group.
	committed int64
}

// commitPoint is the offset a commit may record: the first unacked
// record's, else the one after the last emitted; -1 when nothing was
// emitted.
func (p *partState) commitPoint() int64 {
	for len(p.order) > 0 {
		if _, ok := p.inflight[p.order[0]]; ok {
			return p.order[0]
		}
		p.order = p.order[1:]
	}
	return p.next
}

// Spout emits the records of Kafka topics. See the package documentation
// for what it commits in each delivery mode.
type Spout struct {
	cfg  SpoutConfig
	ctx  api.Context
	log  *zap.Logger
	out  api.SpoutCollector
	mode topology.DeliveryMode
	cl   *kgo.Client

	// mu guards parts, retry and epoch against the rebalance callbacks,
	// which franz-go runs on its own goroutine.
	mu    sync.Mutex
	parts map[topicPartition]*partState
	retry []MsgID
	epoch uint64

	positions  *api.State[string, int64] // effectively-once only
	lastCommit time.Time
	commitDone chan struct{} // closed when the commit in flight is done

	emitted, acked, failed, dropped *api.Counter
}

// NewSpout returns a spout factory for api.TopologyBuilder.SetSpout.
func NewSpout(cfg SpoutConfig) api.SpoutFactory {
	return func() api.Spout {
		c := cfg
		c.Brokers = slices.Clone(cfg.Brokers)
		c.Topics = slices.Clone(cfg.Topics)
		return &Spout{cfg: c}
	}
}

// DeclareOutputFields implements api.Spout.
func (s *Spout) DeclareOutputFields(d api.OutputDeclarer) { d.Declare(Fields...) }

// Open implements api.Spout. Outside effectively-once mode it connects
// and, with a group, joins it; in effectively-once mode InitState does.
func (s *Spout) Open(ctx api.Context, out api.SpoutCollector) error {
	if err := s.cfg.resolve(ctx); err != nil {
		return err
	}
	s.ctx, s.out = ctx, out
	s.log = ctx.Logger().Named("kafka-spout")
	s.mode = ctx.Topology().DeliveryMode()
	s.parts = map[topicPartition]*partState{}
	s.emitted, s.acked, s.failed, s.dropped = ctx.Counter("kafka.emitted"), ctx.Counter("kafka.acked"), ctx.Counter("kafka.failed"), ctx.Counter("kafka.dropped")
	if s.mode == topology.EffectivelyOnce {
		return nil
	}
	if s.cfg.Group != "" {
		return s.openGroup()
	}
	return s.openManual(nil)
}

func (s *Spout) baseOpts() []kgo.Opt {
	// What franz-go buffers in the background is bounded: one fetch of
	// at most 8 MiB (1 MiB per partition) per broker until NextTuple
	// drains it. ClientOptions come last and may change that.
	opts := []kgo.Opt{kgo.SeedBrokers(s.cfg.Brokers...), kgo.WithLogger(zapLogger{s.log}),
		kgo.FetchMaxBytes(8 << 20), kgo.FetchMaxPartitionBytes(1 << 20)}
	if !s.cfg.ReadUncommitted {
		opts = append(opts, kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	}
	return append(opts, s.cfg.ClientOptions...)
}

func (s *Spout) openGroup() error {
	start, _ := startOffset(s.cfg.StartOffset)
	opts := append(s.baseOpts(),
		kgo.ConsumerGroup(s.cfg.Group),
		kgo.ConsumeTopics(s.cfg.Topics...),
		kgo.ConsumeResetOffset(start),
		kgo.DisableAutoCommit(),
		kgo.BlockRebalanceOnPoll(),
		kgo.OnPartitionsAssigned(s.onAssigned),
		kgo.OnPartitionsRevoked(s.onRevoked),
		kgo.OnPartitionsLost(s.onLost),
	)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return fmt.Errorf("kafka: spout client: %w", err)
	}
	s.cl = cl
	return nil
}

// owner returns the index of the task that reads partition p of topic
// when partitions are assigned manually: the topic's partitions are dealt
// round-robin over the tasks, starting at a task chosen by a hash of the
// topic's name (FNV-1a). A partition's owner depends on its topic, its
// number and the number of tasks only, so partitions added to a topic,
// or topics added to the spout, leave every other partition where it
// was.
func owner(topic string, p int32, tasks int) int {
	h := fnv.New32a()
	h.Write([]byte(topic))
	return int((uint64(h.Sum32()) + uint64(p)) % uint64(tasks))
}

// assignment returns the partitions of the spout's topics this task reads
// when partitions are assigned manually (see owner).
func (s *Spout) assignment() ([]topicPartition, error) {
	cl, err := kgo.NewClient(s.baseOpts()...)
	if err != nil {
		return nil, fmt.Errorf("kafka: metadata client: %w", err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	md, err := kadm.NewClient(cl).Metadata(ctx, s.cfg.Topics...)
	if err != nil {
		return nil, fmt.Errorf("kafka: metadata of %v: %w", s.cfg.Topics, err)
	}
	var all []topicPartition
	for _, t := range s.cfg.Topics {
		td, ok := md.Topics[t]
		if !ok || td.Err != nil {
			return nil, fmt.Errorf("kafka: topic %s: %v", t, td.Err)
		}
		for p := range td.Partitions {
			if want, ok := s.cfg.Partitions[t]; len(s.cfg.Partitions) == 0 || ok && slices.Contains(want, p) {
				all = append(all, topicPartition{t, p})
			}
		}
	}
	sort.Slice(all, func(i, j int) bool {
		if all[i].topic != all[j].topic {
			return all[i].topic < all[j].topic
		}
		return all[i].partition < all[j].partition
	})
	tasks := len(s.ctx.ComponentTasks(s.ctx.ComponentName()))
	if tasks < 1 {
		tasks = 1
	}
	var mine []topicPartition
	for _, tp := range all {
		if owner(tp.topic, tp.partition, tasks) == s.ctx.TaskIndex() {
			mine = append(mine, tp)
		}
	}
	return mine, nil
}

// openManual (re)creates the client consuming this task's partitions,
// each from its position in positions, else from the start offset.
func (s *Spout) openManual(positions map[topicPartition]int64) error {
	mine, err := s.assignment()
	if err != nil {
		return err
	}
	start, _ := startOffset(s.cfg.StartOffset)
	consume := map[string]map[int32]kgo.Offset{}
	s.mu.Lock()
	s.epoch++
	clear(s.parts)
	s.retry = nil
	for _, tp := range mine {
		off := start
		next := int64(-1)
		if p, ok := positions[tp]; ok {
			off = kgo.NewOffset().At(p)
			next = p
		}
		if consume[tp.topic] == nil {
			consume[tp.topic] = map[int32]kgo.Offset{}
		}
		consume[tp.topic][tp.partition] = off
		s.parts[tp] = &partState{epoch: s.epoch, next: next, inflight: map[int64]*kgo.Record{}, committed: -1}
	}
	s.mu.Unlock()
	if s.cl != nil {
		s.cl.Close()
		s.cl = nil
	}
	if len(consume) == 0 {
		s.log.Info("no partition for this task", zap.Strings("topics", s.cfg.Topics))
		return nil
	}
	cl, err := kgo.NewClient(append(s.baseOpts(), kgo.ConsumePartitions(consume))...)
	if err != nil {
		return fmt.Errorf("kafka: spout client: %w", err)
	}
	s.cl = cl
	s.log.Info("consuming partitions", zap.Any("partitions", consume))
	return nil
}

func (s *Spout) onAssigned(_ context.Context, _ *kgo.Client, assigned map[string][]int32) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.epoch++
	for t, ps := range assigned {
		for _, p := range ps {
			s.parts[topicPartition{t, p}] = &partState{epoch: s.epoch, next: -1, inflight: map[int64]*kgo.Record{}, committed: -1}
		}
	}
	s.log.Info("partitions assigned", zap.Any("partitions", assigned))
}

// onRevoked commits what may be committed of the revoked partitions
// (synchronously, before the group moves them) and forgets them.
func (s *Spout) onRevoked(ctx context.Context, cl *kgo.Client, revoked map[string][]int32) {
	s.mu.Lock()
	offsets := map[string]map[int32]kgo.EpochOffset{}
	for t, ps := range revoked {
		for _, p := range ps {
			if st, ok := s.parts[topicPartition{t, p}]; ok {
				if c := st.commitPoint(); c >= 0 && c > st.committed {
					if offsets[t] == nil {
						offsets[t] = map[int32]kgo.EpochOffset{}
					}
					offsets[t][p] = kgo.EpochOffset{Epoch: -1, Offset: c}
				}
			}
		}
	}
	s.forget(revoked)
	s.mu.Unlock()
	if len(offsets) > 0 {
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		cl.CommitOffsetsSync(cctx, offsets, func(_ *kgo.Client, _ *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
			if err == nil {
				err = commitResponseErr(resp)
			}
			if err != nil {
				s.log.Warn("commit of revoked partitions failed", zap.Error(err))
			}
		})
	}
	s.log.Info("partitions revoked", zap.Any("partitions", revoked), zap.Any("committed", offsets))
}

func (s *Spout) onLost(_ context.Context, _ *kgo.Client, lost map[string][]int32) {
	s.mu.Lock()
	s.forget(lost)
	s.mu.Unlock()
	s.log.Warn("partitions lost", zap.Any("partitions", lost))
}

// forget drops the pending state of partitions; s.mu is held.
func (s *Spout) forget(m map[string][]int32) {
	gone := map[topicPartition]bool{}
	for t, ps := range m {
		for _, p := range ps {
			tp := topicPartition{t, p}
			if st, ok := s.parts[tp]; ok {
				s.dropped.Add(int64(len(st.inflight)))
			}
			delete(s.parts, tp)
			gone[tp] = true
		}
	}
	s.retry = slices.DeleteFunc(s.retry, func(m MsgID) bool { return gone[topicPartition{m.Topic, m.Partition}] })
}

// InitState implements api.Stateful (effectively-once mode): it binds
// the positions state and (re)starts consuming this task's partitions
// from the positions it holds, forgetting every record fetched before.
//
// Positions are keyed by topic and partition, not by task: the task takes
// the positions of the partitions it owns (see owner) from whatever
// positions it is given, and drops the others from its state. Given the
// union of every task's positions — what a restore with another
// parallelism hands each task — every partition resumes from its
// position; a partition without one starts at StartOffset. In the other
// modes (called once, with empty states) it does nothing: Open started
// consuming.
func (s *Spout) InitState(states *api.States) error {
	if s.mode != topology.EffectivelyOnce {
		return nil
	}
	st, err := api.NewState[string, int64](states, PositionsState, api.WithRestoreMode(api.UnionRestore))
	if err != nil {
		return fmt.Errorf("kafka: spout state: %w", err)
	}
	s.positions = st
	pos := map[topicPartition]int64{}
	var bad error
	st.Range(func(k string, off int64) bool {
		i := strings.LastIndexByte(k, '/')
		p, err := strconv.ParseInt(k[i+1:], 10, 32)
		if i < 0 || err != nil {
			bad = fmt.Errorf("kafka: spout state: bad position key %q", k)
			return false
		}
		pos[topicPartition{k[:i], int32(p)}] = off
		return true
	})
	if bad != nil {
		return bad
	}
	if err := s.openManual(pos); err != nil {
		return err
	}
	s.mu.Lock()
	for tp := range pos {
		if _, ok := s.parts[tp]; !ok {
			st.Delete(tp.key()) // another task's partition
		}
	}
	s.mu.Unlock()
	s.log.Info("state initialised", zap.Int("positions", len(pos)), zap.Int("own", st.Len()))
	return nil
}

// PreSave implements api.Stateful: the positions state is kept current
// as records are emitted, so there is nothing to move.
func (s *Spout) PreSave(int64) error { return nil }

// NextTuple implements api.Spout: it re-emits failed records, then emits
// the records franz-go has fetched in the background, without waiting.
func (s *Spout) NextTuple() {
	if s.cl == nil {
		return
	}
	if s.emitRetries() {
		return
	}
	fs := pollBuffered(s.cl, s.cfg.MaxPollRecords)
	fs.EachError(func(t string, p int32, err error) {
		if !errors.Is(err, context.Canceled) {
			s.log.Warn("fetch error", zap.String("topic", t), zap.Int32("partition", p), zap.Error(err))
		}
	})
	s.mu.Lock()
	fs.EachRecord(s.emitRecord)
	s.mu.Unlock()
	s.maybeCommit()
	if s.cfg.Group != "" && s.mode != topology.EffectivelyOnce {
		s.cl.AllowRebalance()
	}
}

// emitRecord emits one fetched record; s.mu is held.
func (s *Spout) emitRecord(r *kgo.Record) {
	tp := topicPartition{r.Topic, r.Partition}
	st, ok := s.parts[tp]
	if !ok || (st.next >= 0 && r.Offset < st.next) {
		s.dropped.Inc() // a partition no longer ours, or a record fetched again
		return
	}
	st.next = r.Offset + 1
	var id any
	switch s.mode {
	case topology.AtLeastOnce:
		m := MsgID{Topic: r.Topic, Partition: r.Partition, Offset: r.Offset, epoch: st.epoch}
		st.inflight[r.Offset] = r
		st.order = append(st.order, r.Offset)
		id = m
	case topology.EffectivelyOnce:
		s.positions.Put(tp.key(), st.next)
	}
	s.out.Emit(values(r), id)
	s.emitted.Inc()
}

func values(r *kgo.Record) api.Values {
	return api.Values{r.Key, r.Value, r.Topic, r.Partition, r.Offset, r.Timestamp}
}

// emitRetries re-emits failed records; it reports whether it emitted.
func (s *Spout) emitRetries() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.retry) == 0 {
		return false
	}
	n := min(len(s.retry), s.cfg.MaxPollRecords)
	for _, m := range s.retry[:n] {
		st, ok := s.parts[topicPartition{m.Topic, m.Partition}]
		if !ok || st.epoch != m.epoch {
			continue
		}
		if r, ok := st.inflight[m.Offset]; ok {
			s.out.Emit(values(r), m)
			s.emitted.Inc()
		}
	}
	s.retry = s.retry[n:]
	return true
}

// Ack implements api.Spout.
func (s *Spout) Ack(id any) {
	m, ok := id.(MsgID)
	if !ok {
		return
	}
	s.acked.Inc()
	s.mu.Lock()
	if st, ok := s.parts[topicPartition{m.Topic, m.Partition}]; ok && st.epoch == m.epoch {
		delete(st.inflight, m.Offset)
	}
	s.mu.Unlock()
}

// Fail implements api.Spout: the record is emitted again.
func (s *Spout) Fail(id any) {
	m, ok := id.(MsgID)
	if !ok {
		return
	}
	s.failed.Inc()
	s.mu.Lock()
	if st, ok := s.parts[topicPartition{m.Topic, m.Partition}]; ok && st.epoch == m.epoch {
		if _, pending := st.inflight[m.Offset]; pending {
			s.retry = append(s.retry, m)
		}
	}
	s.mu.Unlock()
}

// maybeCommit commits, every CommitInterval and asynchronously, the
// offsets that advanced: the contiguous acked prefix of every partition
// (at-least-once) or what was emitted (at-most-once).
func (s *Spout) maybeCommit() {
	if s.cfg.Group == "" || s.mode == topology.EffectivelyOnce {
		return
	}
	if s.commitDone != nil {
		select {
		case <-s.commitDone:
			s.commitDone = nil
		default:
			return // the last commit is still in flight
		}
	}
	if time.Since(s.lastCommit) < s.cfg.CommitInterval {
		return
	}
	s.lastCommit = time.Now()
	offsets, epochs := s.commitOffsets()
	if len(offsets) == 0 {
		return
	}
	done := make(chan struct{})
	s.commitDone = done
	s.cl.CommitOffsets(context.Background(), offsets, func(_ *kgo.Client, _ *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
		defer close(done)
		if err == nil {
			err = commitResponseErr(resp)
		}
		if err != nil {
			s.log.Warn("offset commit failed (retried at the next interval)", zap.Error(err))
			return
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		for t, ps := range offsets {
			for p, eo := range ps {
				if st, ok := s.parts[topicPartition{t, p}]; ok && st.epoch == epochs[topicPartition{t, p}] && eo.Offset > st.committed {
					st.committed = eo.Offset
				}
			}
		}
	})
}

// commitOffsets returns the offsets to commit now and the epochs they
// belong to.
func (s *Spout) commitOffsets() (map[string]map[int32]kgo.EpochOffset, map[topicPartition]uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	offsets := map[string]map[int32]kgo.EpochOffset{}
	epochs := map[topicPartition]uint64{}
	for tp, st := range s.parts {
		if c := st.commitPoint(); c >= 0 && c > st.committed {
			if offsets[tp.topic] == nil {
				offsets[tp.topic] = map[int32]kgo.EpochOffset{}
			}
			offsets[tp.topic][tp.partition] = kgo.EpochOffset{Epoch: -1, Offset: c}
			epochs[tp] = st.epoch
		}
	}
	return offsets, epochs
}

// Activate implements api.Spout.
func (s *Spout) Activate() {}

// Deactivate implements api.Spout.
func (s *Spout) Deactivate() {}

// Close implements api.Spout: it commits what may be committed, then
// leaves the group and closes the client.
func (s *Spout) Close() {
	if s.cl == nil {
		return
	}
	if s.cfg.Group != "" && s.mode != topology.EffectivelyOnce {
		if s.commitDone != nil {
			<-s.commitDone
		}
		offsets, _ := s.commitOffsets()
		if len(offsets) > 0 {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			s.cl.CommitOffsetsSync(ctx, offsets, func(_ *kgo.Client, _ *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
				if err == nil {
					err = commitResponseErr(resp)
				}
				if err != nil {
					s.log.Warn("final offset commit failed", zap.Error(err))
				}
			})
			cancel()
		}
	}
	s.cl.Close()
	s.cl = nil
}
