package localfs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"go.uber.org/zap"

	"github.com/egret-stream/egret/internal/procinfo"
)

// sessionInfo is the content of a session's lease file. The file's mtime
// is the session's last heartbeat.
type sessionInfo struct {
	PID       int    `json:"pid"`
	Host      string `json:"host"`
	Start     string `json:"start,omitempty"` // process start time (Linux /proc), to detect pid reuse
	TimeoutMS int64  `json:"timeout_ms"`
}

// validSID reports whether s looks like a session id (hex), so that a
// corrupt node file never names a path outside the sessions directory.
func validSID(s string) bool {
	if len(s) < 8 || len(s) > 64 {
		return false
	}
	for _, c := range s {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

func (m *StateManager) sessionFile(sid string) string {
	return filepath.Join(m.root, sessionsDir, sid)
}

// isAlive reports whether session sid is alive, caching the answer for
// the transaction. A dead session's lease file is removed, so the death is
// final: a paused process that resumes finds its session gone.
func (t *tx) isAlive(sid string) bool {
	if v, ok := t.alive[sid]; ok {
		return v
	}
	v := t.m.checkSession(sid, t.now)
	t.alive[sid] = v
	return v
}

func (m *StateManager) checkSession(sid string, now time.Time) bool {
	if !validSID(sid) {
		return false
	}
	path := m.sessionFile(sid)
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return false
	}
	if err != nil {
		m.log.Warn("cannot read session lease; assuming the session is alive", zap.String("file", path), zap.Error(err))
		return true
	}
	st, err := os.Stat(path)
	if err != nil {
		return !errors.Is(err, fs.ErrNotExist)
	}
	var info sessionInfo
	reason := ""
	switch {
	case json.Unmarshal(b, &info) != nil:
		reason = "corrupt lease file"
	case now.Sub(st.ModTime()) > time.Duration(info.TimeoutMS)*time.Millisecond:
		reason = fmt.Sprintf("no heartbeat for %v (timeout %v)", now.Sub(st.ModTime()).Round(time.Millisecond), time.Duration(info.TimeoutMS)*time.Millisecond)
	case info.Host == m.host && !procinfo.Alive(info.PID, info.Start):
		reason = fmt.Sprintf("process %d is gone", info.PID)
	default:
		return true
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		m.log.Warn("cannot remove the lease of a dead session", zap.String("file", path), zap.Error(err))
	}
	m.log.Info("session expired", zap.String("session", sid), zap.Int("pid", info.PID), zap.String("host", info.Host), zap.String("reason", reason))
	return false
}

// writeSessionLocked creates the lease file of session sid.
func (m *StateManager) writeSessionLocked(sid string) error {
	b, _ := json.Marshal(sessionInfo{PID: m.pid, Host: m.host, Start: m.pstart, TimeoutMS: m.timeout.Milliseconds()})
	tmp := filepath.Join(m.root, sessionsDir, tmpPrefix+sid)
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return fmt.Errorf("localfs state manager: write session lease: %w", err)
	}
	if err := os.Rename(tmp, m.sessionFile(sid)); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("localfs state manager: write session lease: %w", err)
	}
	return nil
}

// renewLocked starts a new session after the current one was declared
// dead: watches report spi.EventSessionLost and the ephemeral nodes of the
// old session are gone. The caller holds the store lock.
func (m *StateManager) renewLocked(reason string) (string, error) {
	sid := randomHex(8)
	if err := m.writeSessionLocked(sid); err != nil {
		return "", err
	}
	m.mu.Lock()
	old := m.sid
	m.sid = sid
	m.gen++
	m.ephemerals = map[string]struct{}{}
	m.mu.Unlock()
	m.log.Warn("session lost; continuing with a new session (ephemeral nodes must be created again)",
		zap.String("old_session", old), zap.String("session", sid), zap.String("reason", reason))
	m.notifyLocal()
	return sid, nil
}

// heartbeat refreshes the session lease every SessionTimeout/3.
func (m *StateManager) heartbeat() {
	defer close(m.hbDone)
	tick := time.NewTicker(m.timeout / 3)
	defer tick.Stop()
	for {
		select {
		case <-m.hbStop:
			return
		case <-tick.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), m.timeout)
		err := m.run(ctx, func(t *tx) error {
			now := time.Now()
			err := os.Chtimes(m.sessionFile(t.sid), now, now)
			if errors.Is(err, fs.ErrNotExist) {
				_, err = m.renewLocked("another process found the session lease expired")
			}
			return err
		})
		cancel()
		if err != nil {
			m.log.Warn("session heartbeat failed", zap.Error(err))
		}
	}
}
