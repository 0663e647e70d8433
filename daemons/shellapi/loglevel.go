package shellapi

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// SecretHeader carries the topology's secret, hex-encoded, on the
// shell's endpoints that change something (POST /loglevel, POST /kill).
const SecretHeader = "X-Egret-Secret"

// LogLevelRequest is the body of the shell's POST /loglevel.
type LogLevelRequest struct {
	Level     string `json:"level"`
	Component string `json:"component,omitempty"`
	// Duration is a Go duration, at most loglevel.MaxDuration.
	Duration string `json:"duration"`
}

// PostLogLevel sends req to the shell of container at base (its URL)
// with the topology's secret and returns when the level expires. The CLI
// (egret loglevel) and the tracker's console both set levels with it.
func PostLogLevel(ctx context.Context, client *http.Client, container int, base string, secret []byte, req LogLevelRequest) (time.Time, error) {
	if len(secret) == 0 {
		return time.Time{}, fmt.Errorf("container %d: the topology has no secret (submitted by an older egret?)", container)
	}
	body, err := json.Marshal(req)
	if err != nil {
		return time.Time{}, err
	}
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/loglevel", bytes.NewReader(body))
	if err != nil {
		return time.Time{}, err
	}
	hr.Header.Set("Content-Type", "application/json")
	hr.Header.Set(SecretHeader, hex.EncodeToString(secret))
	resp, err := client.Do(hr)
	if err != nil {
		return time.Time{}, fmt.Errorf("shell of container %d: %w", container, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
		return time.Time{}, fmt.Errorf("shell of container %d: %s: %s", container, resp.Status, strings.TrimSpace(strings.ReplaceAll(string(b), "\n", " ")))
	}
	var o struct {
		Expires time.Time `json:"expires"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&o); err != nil {
		return time.Time{}, fmt.Errorf("shell of container %d: decode the reply: %w", container, err)
	}
	return o.Expires, nil
}
