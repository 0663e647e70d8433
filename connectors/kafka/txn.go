package kafka

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
	"go.uber.org/zap"

	"github.com/egret-stream/egret/api"
)

// fenceTimeout is the least time InitState gives fencing.
const fenceTimeout = time.Minute

// PreparedTxn is a Kafka transaction the effectively-once sink flushed at
// the barrier of Checkpoint and has not committed yet. The state maps its
// transactional id to it; with the producer id and epoch any later
// process — any task — can commit it (EndTxn), as the producer that
// opened it would have.
type PreparedTxn struct {
	Checkpoint int64
	ProducerID int64
	Epoch      int16
	Records    int64
}

// Slot states of a txnWriter.
const (
	slotFree      = iota
	slotOpen      // the open transaction records are produced into
	slotPrepared  // flushed at a barrier, its checkpoint not complete yet
	slotCommitted // committed; free once a later checkpoint is complete
)

type slotInfo struct {
	state int
	// releaseAfter: a committed slot is free once a checkpoint after
	// this one is complete (no restore can then name its transaction).
	releaseAfter int64
}

// txnWriter is the effectively-once half of the Sink: a two-phase commit
// over Kafka transactions.
//
// Records go into an open transaction as they arrive. At a barrier
// (PreSave) the transaction is flushed, its producer id and epoch are
// recorded with the checkpoint id in the state TransactionsState under its
// transactional id, and its client is closed: the transaction stays open on the broker, holding
// the interval's records. When the checkpoint is complete the transaction
// is committed with an EndTxn request carrying that id and epoch, from
// whichever process restored or kept the state. The next records go into
// a transaction under another transactional id of the task's slots.
//
// Transactional ids are "<prefix>-<task index>-<slot>". A slot is reused
// only after a checkpoint later than the one that could name its last
// transaction is complete, so the transactions a restored state names are
// always the last ones of their ids. At every InitState (start, rollback)
// every slot the restored state does not name is fenced: InitProducerID
// bumps the epoch of its id and aborts the transaction a dead or zombie
// producer had open there.
type txnWriter struct {
	s      *Sink
	prefix string
	slots  []slotInfo
	state  *api.State[string, PreparedTxn]
	ctl    *kgo.Client // sends EndTxn for prepared transactions

	open     *kgo.Client // the open transaction's producer, nil when none
	openSlot int32
	openRecs int64

	lastBarrier int64 // the last checkpoint id PreSave saw
	// starved is the checkpoint PreSave declined for want of a free
	// transactional id since the last complete checkpoint (0: none).
	starved int64

	mu   sync.Mutex
	perr error // the first failed produce of the open transaction
	// gen numbers the open transaction: the client of a dropped one
	// fails its records (client closed) after Close returns, and those
	// promises must not fail the next transaction.
	gen         uint64
	openPromise func(*kgo.Record, error)

	// exit ends the process after a failure that loses records of the
	// open transaction: the runtime then rolls the topology back and the
	// records are replayed (tests replace it).
	exit func(code int)
}

// classicTransactions keeps franz-go on Kafka's classic transaction
// protocol (before KIP-890 part 2, which bumps the producer epoch at
// every commit): a transaction is committed by its producer id and the
// epoch recorded at the barrier, and a commit repeated after a crash
// finds the transaction complete at that same epoch and succeeds.
func classicTransactions() *kversion.Versions {
	v := kversion.Stable()
	v.SetMaxKeyVersion(int16(kmsg.Produce), 11)
	v.SetMaxKeyVersion(int16(kmsg.EndTxn), 4)
	v.SetMaxKeyVersion(int16(kmsg.TxnOffsetCommit), 4)
	return v
}

func newTxnWriter(s *Sink, task int) (*txnWriter, error) {
	if s.cfg.TransactionSlots < 2 {
		return nil, fmt.Errorf("kafka: %s: %d transactional ids per task; at least 2 are needed", KeyTransactionSlots, s.cfg.TransactionSlots)
	}
	ctl, err := kgo.NewClient(s.opts(kgo.MaxVersions(classicTransactions()))...)
	if err != nil {
		return nil, fmt.Errorf("kafka: sink client: %w", err)
	}
	return &txnWriter{s: s, prefix: s.cfg.TransactionalID + "-" + strconv.Itoa(task), slots: make([]slotInfo, s.cfg.TransactionSlots), ctl: ctl,
		exit: os.Exit}, nil
}

func (w *txnWriter) id(slot int32) string { return w.prefix + "-" + strconv.Itoa(int(slot)) }

// slotOf returns the slot of one of this task's transactional ids, and
// false for another task's.
func (w *txnWriter) slotOf(id string) (int32, bool, error) {
	rest, ok := strings.CutPrefix(id, w.prefix+"-")
	if !ok {
		return 0, false, nil
	}
	n, err := strconv.Atoi(rest)
	if err != nil {
		return 0, false, nil // a longer prefix: another task's
	}
	if n < 0 || n >= len(w.slots) {
		return 0, false, fmt.Errorf("kafka: sink state: transactional id %s is slot %d, but the sink has %d (%s): restore with the same setting",
			id, n, len(w.slots), KeyTransactionSlots)
	}
	return int32(n), true, nil
}

// producer returns a transactional client for slot's id; its first
// request initialises the producer id, which fences the id's earlier
// producers.
func (w *txnWriter) producer(slot int32) (*kgo.Client, error) {
	cl, err := kgo.NewClient(w.s.opts(
		kgo.TransactionalID(w.id(slot)),
		kgo.TransactionTimeout(w.s.cfg.TransactionTimeout),
		kgo.MaxVersions(classicTransactions()),
		kgo.DefaultProduceTopic(w.s.cfg.Topic),
	)...)
	if err != nil {
		return nil, fmt.Errorf("kafka: transactional client %s: %w", w.id(slot), err)
	}
	return cl, nil
}

// initState binds the restored transactions and fences every other slot.
func (w *txnWriter) initState(states *api.States) error {
	st, err := api.NewState[string, PreparedTxn](states, TransactionsState, api.WithRestoreMode(api.UnionRestore))
	if err != nil {
		return fmt.Errorf("kafka: sink state: %w", err)
	}
	w.dropOpen()
	w.state = st
	clear(w.slots)
	w.lastBarrier, w.starved = 0, 0
	var bad error
	st.Range(func(id string, _ PreparedTxn) bool {
		slot, own, err := w.slotOf(id)
		if err != nil {
			bad = err
			return false
		}
		if own {
			w.slots[slot].state = slotPrepared
		}
		return true
	})
	if bad != nil {
		return bad
	}
	// The first InitProducerID of a cluster creates its transaction
	// state topic: give fencing at least a minute.
	ctx, cancel := context.WithTimeout(context.Background(), max(w.s.cfg.ProduceTimeout, fenceTimeout))
	defer cancel()
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	for i := range w.slots {
		if w.slots[i].state != slotFree {
			continue
		}
		wg.Add(1)
		go func(slot int32) {
			defer wg.Done()
			if err := w.fence(ctx, slot); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		}(int32(i))
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	w.s.log.Info("transactional ids fenced", zap.String("prefix", w.prefix), zap.Int("slots", len(w.slots)), zap.Int("prepared", st.Len()))
	return nil
}

// fence initialises slot's producer id, which aborts the transaction an
// earlier producer of the id left open and fences that producer.
func (w *txnWriter) fence(ctx context.Context, slot int32) error {
	cl, err := w.producer(slot)
	if err != nil {
		return err
	}
	defer cl.Close()
	if _, _, err := cl.ProducerID(ctx); err != nil {
		return fmt.Errorf("kafka: fence transactional id %s: %w", w.id(slot), err)
	}
	return nil
}

// dropOpen closes the open transaction's client without ending the
// transaction (the fencing at the next InitState aborts it).
func (w *txnWriter) dropOpen() {
	if w.open != nil {
		w.open.Close()
		w.open = nil
		w.slots[w.openSlot].state = slotFree
	}
	w.openRecs = 0
	w.mu.Lock()
	w.gen++
	w.perr = nil
	w.mu.Unlock()
}

// produce adds r to the open transaction, opening one when none is.
// It waits while the producer's buffer is full.
func (w *txnWriter) produce(r *kgo.Record) {
	if err := w.failure(); err != nil {
		w.fatal(err)
		return
	}
	if w.open == nil {
		if err := w.begin(); err != nil {
			w.fatal(err)
			return
		}
	}
	w.open.Produce(context.Background(), r, w.openPromise)
	w.openRecs++
}

// promise returns the produce promise of transaction generation gen: it
// records the first failure while gen is the open transaction.
func (w *txnWriter) promise(gen uint64) func(*kgo.Record, error) {
	return func(_ *kgo.Record, err error) {
		if err == nil {
			return
		}
		w.mu.Lock()
		if w.gen == gen && w.perr == nil {
			w.perr = err
		}
		w.mu.Unlock()
	}
}

func (w *txnWriter) failure() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.perr
}

// begin opens a transaction in a free slot.
func (w *txnWriter) begin() error {
	slot := slices.IndexFunc(w.slots, func(s slotInfo) bool { return s.state == slotFree })
	if slot < 0 {
		return fmt.Errorf("kafka: sink: no free transactional id among the %d of %s (a bug: PreSave keeps one free)", len(w.slots), w.prefix)
	}
	cl, err := w.producer(int32(slot))
	if err != nil {
		return err
	}
	if err := cl.BeginTransaction(); err != nil {
		cl.Close()
		return fmt.Errorf("kafka: begin a transaction on %s: %w", w.id(int32(slot)), err)
	}
	w.mu.Lock()
	w.gen++
	w.openPromise = w.promise(w.gen)
	w.mu.Unlock()
	w.open, w.openSlot, w.openRecs = cl, int32(slot), 0
	w.slots[slot].state = slotOpen
	return nil
}

// fatal ends the process: records of the open transaction may be lost
// (a produce failed for good, or the broker aborted the transaction), and
// only a rollback of the topology replays them.
func (w *txnWriter) fatal(err error) {
	err = fmt.Errorf("kafka: sink: the open transaction on %s failed, its records cannot be committed: %w; exiting so that the topology rolls back to its last checkpoint and replays them", w.id(w.openSlot), err)
	w.s.log.Error("transaction failed", zap.Error(err))
	w.s.out.ReportError(err)
	_ = w.s.log.Sync()
	w.exit(1)
}

// preSave prepares the open transaction as checkpoint's: flushed, and
// recorded in the state. A transaction with no record stays open for the
// next interval. The checkpoint is declined (an error) when the flush
// does not finish within ProduceTimeout or no slot would be left for the
// next transaction; the records then stay in the open transaction.
func (w *txnWriter) preSave(checkpoint int64) error {
	w.lastBarrier = checkpoint
	if w.open == nil || w.openRecs == 0 {
		return nil
	}
	free := 0
	for _, s := range w.slots {
		if s.state == slotFree {
			free++
		}
	}
	if free == 0 {
		if w.starved != 0 {
			// The held transactions are of checkpoints that failed: only
			// a later checkpoint's completion frees them, and every later
			// one is declined here as this one is. Only a rollback frees
			// them (the restored state's transactions commit, the others
			// are fenced, the tuples since replay).
			err := fmt.Errorf("kafka: sink: all %d transactional ids of %s hold transactions of checkpoints that did not complete, and no checkpoint completed between checkpoints %d and %d, both declined: none can complete any more; exiting so that the topology rolls back to its last complete checkpoint (raise %s or the checkpoint interval)",
				len(w.slots), w.prefix, w.starved, checkpoint, KeyTransactionSlots)
			w.s.log.Error("transactional ids exhausted", zap.Error(err))
			w.s.out.ReportError(err)
			_ = w.s.log.Sync()
			w.exit(1)
			return err
		}
		w.starved = checkpoint
		return fmt.Errorf("kafka: sink: all %d transactional ids of %s hold transactions of checkpoints not complete yet; checkpoint %d declined (raise %s or the checkpoint interval)",
			len(w.slots), w.prefix, checkpoint, KeyTransactionSlots)
	}
	ctx, cancel := context.WithTimeout(context.Background(), w.s.cfg.ProduceTimeout)
	defer cancel()
	if err := w.open.Flush(ctx); err != nil {
		return fmt.Errorf("kafka: sink: flush the transaction of checkpoint %d on %s: %w (declined; its records stay in the open transaction)", checkpoint, w.id(w.openSlot), err)
	}
	if err := w.failure(); err != nil {
		w.fatal(err)
		return err
	}
	pid, epoch, err := w.open.ProducerID(ctx)
	if err != nil {
		w.fatal(err)
		return err
	}
	w.state.Put(w.id(w.openSlot), PreparedTxn{Checkpoint: checkpoint, ProducerID: pid, Epoch: epoch, Records: w.openRecs})
	w.slots[w.openSlot].state = slotPrepared
	w.open.Close() // the transaction stays open on the broker
	w.open, w.openRecs = nil, 0
	return nil
}

// complete commits, in checkpoint order, every prepared transaction of a
// checkpoint ≤ checkpoint, and frees the slots no restore can name any
// more. A commit that fails for a reason that may pass (broker down) is
// retried at the next complete checkpoint.
func (w *txnWriter) complete(checkpoint int64) {
	w.starved = 0
	var ids []string
	w.state.Range(func(id string, p PreparedTxn) bool {
		if p.Checkpoint <= checkpoint {
			ids = append(ids, id)
		}
		return true
	})
	slices.SortFunc(ids, func(a, b string) int {
		pa, _ := w.state.Get(a)
		pb, _ := w.state.Get(b)
		return cmp.Or(cmp.Compare(pa.Checkpoint, pb.Checkpoint), strings.Compare(a, b))
	})
	release := max(w.lastBarrier, checkpoint)
	for _, id := range ids {
		p, _ := w.state.Get(id)
		err := w.commit(id, p)
		if err != nil && retriable(err) {
			err = fmt.Errorf("kafka: sink: commit the transaction of checkpoint %d on %s: %w (retried when the next checkpoint completes)", p.Checkpoint, id, err)
			w.s.log.Warn("commit failed", zap.Error(err))
			w.s.out.ReportError(err)
			break
		}
		if err != nil {
			// The broker ended the transaction otherwise (aborted at
			// its timeout): its records are lost and nothing can
			// bring them back.
			err = fmt.Errorf("kafka: sink: the transaction of checkpoint %d on %s (%d records) cannot be committed: %w; its records are LOST (was the transaction open longer than %s = %s?)",
				p.Checkpoint, id, p.Records, err, KeyTransactionTimeout, w.s.cfg.TransactionTimeout)
			w.s.log.Error("transaction lost", zap.Error(err))
			w.s.out.ReportError(err)
			w.s.failed.Add(p.Records)
		} else {
			w.s.written.Add(p.Records)
			w.s.commits.Inc()
		}
		w.state.Delete(id)
		if slot, own, _ := w.slotOf(id); own {
			w.slots[slot] = slotInfo{state: slotCommitted, releaseAfter: release}
		}
	}
	for i, s := range w.slots {
		if s.state == slotCommitted && s.releaseAfter < checkpoint {
			w.slots[i] = slotInfo{}
		}
	}
}

// commit ends p's transaction with a commit. A transaction already
// committed (by a process that died before its state said so) commits
// again without an error.
func (w *txnWriter) commit(id string, p PreparedTxn) error {
	ctx, cancel := context.WithTimeout(context.Background(), w.s.cfg.ProduceTimeout)
	defer cancel()
	for {
		req := kmsg.NewPtrEndTxnRequest()
		req.TransactionalID = id
		req.ProducerID = p.ProducerID
		req.ProducerEpoch = p.Epoch
		req.Commit = true
		resp, err := req.RequestWith(ctx, w.ctl)
		if err == nil {
			err = kerr.ErrorForCode(resp.ErrorCode)
		}
		if err == nil || !retriable(err) || ctx.Err() != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// retriable reports whether a failed request may succeed later: a
// retriable Kafka error, or no answer at all.
func retriable(err error) bool {
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke.Retriable || errors.Is(err, kerr.ConcurrentTransactions)
	}
	return true
}

// close aborts the open transaction and closes the clients.
func (w *txnWriter) close() {
	if w.open != nil {
		ctx, cancel := context.WithTimeout(context.Background(), w.s.cfg.ProduceTimeout)
		if err := w.open.AbortBufferedRecords(ctx); err == nil {
			if err := w.open.EndTransaction(ctx, kgo.TryAbort); err != nil {
				w.s.log.Warn("abort the open transaction at cleanup", zap.Error(err))
			}
		}
		cancel()
	}
	w.dropOpen()
	w.ctl.Close()
}

// InitState implements api.Stateful (effectively-once mode): it binds
// the prepared transactions of the restored checkpoint (committed when
// CheckpointComplete follows) and fences every other transactional id of
// the task, which aborts what a failed or zombie process had open.
func (s *Sink) InitState(states *api.States) error {
	if s.tx == nil {
		return nil
	}
	return s.tx.initState(states)
}

// PreSave implements api.Stateful: the open transaction is flushed and
// recorded in the state as checkpoint's.
func (s *Sink) PreSave(checkpoint int64) error {
	if s.tx == nil {
		return nil
	}
	return s.tx.preSave(checkpoint)
}

// CheckpointComplete implements api.CheckpointListener: the transactions
// prepared at checkpoints ≤ checkpoint are committed.
func (s *Sink) CheckpointComplete(checkpoint int64) {
	if s.tx != nil && s.tx.state != nil {
		s.tx.complete(checkpoint)
	}
}
