package http

import (
	"time"

	"github.com/egret-stream/egret/core/spi"
)

// SetRetryHook lets tests observe retries and shorten the backoff.
func SetRetryHook(u spi.Uploader, backoff time.Duration, f func(attempt int, err error)) {
	up := u.(*Uploader)
	up.retry.Backoff = backoff
	up.retry.OnRetry = f
}
