package stmgr

import (
	"sync"
	"time"

	"go.uber.org/zap"
)

// changeLogEvery is the least time between two INFO lines of a change log.
const changeLogEvery = 10 * time.Second

// changeLog logs a state that may flap (back pressure under load changes
// many times a second) at INFO at most once per changeLogEvery, with the
// number of changes not logged at INFO since the last line; every change
// is logged at DEBUG.
type changeLog struct {
	mu         sync.Mutex
	last       time.Time
	suppressed int
}

func (c *changeLog) log(l *zap.Logger, now time.Time, msg string, fields ...zap.Field) {
	c.mu.Lock()
	info := c.last.IsZero() || now.Sub(c.last) >= changeLogEvery
	n := c.suppressed
	if info {
		c.last, c.suppressed = now, 0
	} else {
		c.suppressed++
	}
	c.mu.Unlock()
	if info {
		l.Info(msg, append(fields, zap.Int("changes_since_last_info", n))...)
		return
	}
	l.Debug(msg, fields...)
}
