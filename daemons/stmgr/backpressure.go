package stmgr

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/egret-stream/egret/daemons/wire"
)

// Back pressure (see docs/protocol.md, "Back pressure"). A stream manager has two local
// causes, each with hysteresis: a queue toward a connected local instance
// (causeInstance) or toward a connected peer (causePeer) passed the high
// watermark; the cause ends when every such queue is below the low
// watermark. While a local cause is active it announces back pressure to
// every peer, re-sending the state every interval. It stops reading its
// local spouts while any local cause or any peer's unexpired announcement
// is active.
const (
	causeInstance = iota
	causePeer
	causeAnnounced // some peer announces back pressure
	numCauses
)

// peerAnnouncement is a peer's last announced state.
type peerAnnouncement struct {
	cause    uint8
	lastSeen time.Time
}

// backPressure is the back pressure state of a stream manager.
type backPressure struct {
	// throttled is read for every frame from a spout; resume is closed
	// when throttling ends.
	throttled atomic.Bool
	// localActive mirrors active[causeInstance] || active[causePeer] for
	// the writers' fast path.
	localActive atomic.Bool

	// changes and peerChanges rate-limit the INFO lines of state changes.
	changes, peerChanges changeLog

	mu             sync.Mutex
	resume         chan struct{}
	active         [numCauses]bool
	since          [numCauses]time.Time
	spent          [numCauses]time.Duration
	throttledSince time.Time
	throttledSpent time.Duration
	engagements    int64
	peers          map[int32]peerAnnouncement
}

func newBackPressure() *backPressure {
	return &backPressure{resume: make(chan struct{}), peers: map[int32]peerAnnouncement{}}
}

// BackPressureCounters is a snapshot of the back pressure state. Times
// are cumulative, in nanoseconds, and include the current episode.
type BackPressureCounters struct {
	// Active reports whether the stream manager is not reading its local
	// spouts now.
	Active bool
	// Initiated reports whether a local cause is active (this stream
	// manager announces back pressure to its peers).
	Initiated bool
	// ByLocalInstanceNs: time a queue toward a local instance was above
	// the watermarks. ByRemoteStMgrNs: time a queue toward a peer stream
	// manager was. AnnouncedByPeersNs: time at least one peer announced
	// back pressure. ThrottledNs: time the local spouts were not read.
	ByLocalInstanceNs, ByRemoteStMgrNs, AnnouncedByPeersNs, ThrottledNs int64
	// Engagements counts how many times throttling began.
	Engagements int64
	// Announcing lists the peers whose announcement is in force.
	Announcing []int
}

func (b *backPressure) snapshot(now time.Time) BackPressureCounters {
	b.mu.Lock()
	defer b.mu.Unlock()
	var spent [numCauses]time.Duration
	for i := range spent {
		spent[i] = b.spent[i]
		if b.active[i] {
			spent[i] += now.Sub(b.since[i])
		}
	}
	th := b.throttledSpent
	if b.throttled.Load() {
		th += now.Sub(b.throttledSince)
	}
	c := BackPressureCounters{
		Active:             b.throttled.Load(),
		Initiated:          b.active[causeInstance] || b.active[causePeer],
		ByLocalInstanceNs:  int64(spent[causeInstance]),
		ByRemoteStMgrNs:    int64(spent[causePeer]),
		AnnouncedByPeersNs: int64(spent[causeAnnounced]),
		ThrottledNs:        int64(th),
		Engagements:        b.engagements,
	}
	for id := range b.peers {
		c.Announcing = append(c.Announcing, int(id))
	}
	return c
}

// setLocked turns a cause on or off, accounting its time. It reports
// whether the cause changed.
func (b *backPressure) setLocked(cause int, on bool, now time.Time) bool {
	if b.active[cause] == on {
		return false
	}
	b.active[cause] = on
	if on {
		b.since[cause] = now
	} else {
		b.spent[cause] += now.Sub(b.since[cause])
	}
	b.localActive.Store(b.active[causeInstance] || b.active[causePeer])
	return true
}

// updateThrottleLocked makes the throttle follow the causes.
func (b *backPressure) updateThrottleLocked(now time.Time) {
	on := b.active[causeInstance] || b.active[causePeer] || b.active[causeAnnounced]
	if b.throttled.Load() == on {
		return
	}
	if on {
		b.throttledSince = now
		b.engagements++
		b.throttled.Store(true)
		return
	}
	b.throttledSpent += now.Sub(b.throttledSince)
	b.throttled.Store(false)
	close(b.resume)
	b.resume = make(chan struct{})
}

// causeBits is the cause field announced to peers.
func (b *backPressure) causeBitsLocked() uint8 {
	var c uint8
	if b.active[causeInstance] {
		c |= wire.CauseLocalInstance
	}
	if b.active[causePeer] {
		c |= wire.CauseRemoteStMgr
	}
	return c
}

// waitUnthrottled blocks while the stream manager is throttled. It
// returns false if ctx ends or stop is closed first.
func (s *StMgr) waitUnthrottled(ctx context.Context, stop <-chan struct{}) bool {
	for s.bp.throttled.Load() {
		s.bp.mu.Lock()
		ch := s.bp.resume
		on := s.bp.throttled.Load()
		s.bp.mu.Unlock()
		if !on {
			return true
		}
		select {
		case <-ch:
		case <-stop:
			return false
		case <-ctx.Done():
			return false
		}
	}
	return true
}

// afterPush engages back pressure at once when a push took a live
// destination's queue past the high watermark, so that a fast spout
// overshoots by at most the frames already read.
func (s *StMgr) afterPush(d *dest, toPeer bool) {
	if !d.counts() || d.q.Bytes() <= s.set.high {
		return
	}
	cause := causeInstance
	if toPeer {
		cause = causePeer
	}
	s.bp.mu.Lock()
	if s.bp.active[cause] {
		s.bp.mu.Unlock()
		return
	}
	s.bp.mu.Unlock()
	s.checkWatermarks()
}

// afterRelease re-checks the watermarks when a writer drained bytes while
// a local cause is active, so back pressure ends as soon as the queues
// are below the low watermark.
func (s *StMgr) afterRelease(d *dest) {
	if s.bp.localActive.Load() && d.q.Bytes() < s.set.low {
		s.checkWatermarks()
	}
}

// counts reports whether d's queue counts for back pressure.
func (d *dest) counts() bool { return d.live.Load() || d.starting.Load() }

// checkWatermarks recomputes the local causes from every live queue and
// announces a change to the peers.
func (s *StMgr) checkWatermarks() {
	rt := s.table.Load()
	if rt == nil {
		return
	}
	var above, belowLow [2]bool
	belowLow[causeInstance], belowLow[causePeer] = true, true
	scan := func(cause int, d *dest) {
		if !d.counts() {
			return
		}
		n := d.q.Bytes()
		if n > s.set.high {
			above[cause] = true
		}
		if n >= s.set.low {
			belowLow[cause] = false
		}
	}
	for _, td := range rt.local {
		if td != nil {
			scan(causeInstance, &td.dest)
		}
	}
	for _, p := range rt.peers {
		if p != nil {
			scan(causePeer, &p.dest)
		}
	}
	now := time.Now()
	s.bp.mu.Lock()
	changed := false
	for cause := range 2 {
		switch {
		case above[cause] && !s.bp.active[cause]:
			changed = s.bp.setLocked(cause, true, now) || changed
		case belowLow[cause] && s.bp.active[cause]:
			changed = s.bp.setLocked(cause, false, now) || changed
		}
	}
	if !changed {
		s.bp.mu.Unlock()
		return
	}
	s.bp.updateThrottleLocked(now)
	ann := wire.BackPressure{Container: int32(s.cfg.Container), Active: s.bp.localActive.Load(), Cause: s.bp.causeBitsLocked()}
	s.bp.mu.Unlock()
	s.bp.changes.log(s.log, now, "back pressure state changed", zap.Bool("initiated", ann.Active), zap.Uint8("cause", ann.Cause))
	s.announce(rt, ann)
}

// announce queues ann on every peer connection, ahead of data.
func (s *StMgr) announce(rt *routes, ann wire.BackPressure) {
	if rt == nil {
		return
	}
	b := wire.AppendBackPressure(nil, ann)
	for _, p := range rt.peers {
		if p != nil {
			p.ctl.Store(&b)
			p.q.Signal()
		}
	}
}

// currentAnnouncement is the state to send to peers now.
func (s *StMgr) currentAnnouncement() wire.BackPressure {
	s.bp.mu.Lock()
	defer s.bp.mu.Unlock()
	return wire.BackPressure{Container: int32(s.cfg.Container), Active: s.bp.localActive.Load(), Cause: s.bp.causeBitsLocked()}
}

// peerState records a peer's announcement.
func (s *StMgr) peerState(from int32, ann wire.BackPressure) {
	now := time.Now()
	s.bp.mu.Lock()
	defer s.bp.mu.Unlock()
	_, had := s.bp.peers[from]
	if ann.Active {
		s.bp.peers[from] = peerAnnouncement{cause: ann.Cause, lastSeen: now}
	} else {
		delete(s.bp.peers, from)
	}
	if had != ann.Active {
		s.bp.peerChanges.log(s.log, now, "peer back pressure announcement", zap.Int32("peer_container", from), zap.Bool("active", ann.Active), zap.Uint8("cause", ann.Cause))
	}
	s.updateAnnouncedLocked(now)
}

// peerGone clears the announcement of a peer whose connection closed.
func (s *StMgr) peerGone(from int32) {
	now := time.Now()
	s.bp.mu.Lock()
	defer s.bp.mu.Unlock()
	if _, ok := s.bp.peers[from]; !ok {
		return
	}
	delete(s.bp.peers, from)
	s.log.Info("peer connection closed; clearing its back pressure announcement", zap.Int32("peer_container", from))
	s.updateAnnouncedLocked(now)
}

// expireAnnouncements drops announcements not re-sent for expiry
// intervals: a lost release never freezes the topology.
func (s *StMgr) expireAnnouncements(now time.Time) {
	ttl := time.Duration(s.cfg.BackPressureExpiry) * s.cfg.BackPressureInterval
	s.bp.mu.Lock()
	defer s.bp.mu.Unlock()
	for id, a := range s.bp.peers {
		if now.Sub(a.lastSeen) > ttl {
			delete(s.bp.peers, id)
			s.log.Warn("a peer's back pressure announcement expired (not re-sent); releasing it", zap.Int32("peer_container", id), zap.Duration("ttl", ttl))
		}
	}
	s.updateAnnouncedLocked(now)
}

func (s *StMgr) updateAnnouncedLocked(now time.Time) {
	s.bp.setLocked(causeAnnounced, len(s.bp.peers) > 0, now)
	s.bp.updateThrottleLocked(now)
}

// runBackPressure re-checks the watermarks, re-sends an active state to
// every peer and expires stale announcements every interval until ctx
// ends. The released state is sent when it changes (checkWatermarks) and
// to every new connection, never re-sent: peers drop an announcement that
// is not re-sent anyway, and an idle mesh of N stream managers then sends
// nothing instead of N(N-1) frames per interval (docs/operations.md §Scale).
func (s *StMgr) runBackPressure(ctx context.Context) {
	t := time.NewTicker(s.cfg.BackPressureInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			s.checkWatermarks()
			s.expireAnnouncements(now)
			if ann := s.currentAnnouncement(); ann.Active {
				s.announce(s.table.Load(), ann)
			}
		}
	}
}
