package conf

import (
	"testing"

	"github.com/egret-stream/egret/core/spi"
)

// TestResolved: a resolved configuration serves its own topology as is
// and refuses another.
func TestResolved(t *testing.T) {
	cfg := spi.Config{"egret.statemgr": "localfs"}
	c := Resolved(cfg, "local", "me", "default", "wc")
	cfg["egret.statemgr"] = "changed"
	got, err := c.WithTopology("wc")
	if err != nil || got.String("egret.statemgr") != "localfs" || got.Name != "local" || got.Role != "me" {
		t.Fatalf("WithTopology(wc) = %+v, %v", got, err)
	}
	if _, err := c.WithTopology("other"); err == nil {
		t.Fatal("WithTopology(other) accepted")
	}
}
