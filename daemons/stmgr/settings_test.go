package stmgr

import (
	"testing"
	"time"

	"github.com/egret-stream/egret/core/spi"
	"github.com/egret-stream/egret/statemgr/memory"
)

// TestSettingsFromKeys: the cluster config keys reach the stream manager's
// settings (their effects are tested on the settings).
func TestSettingsFromKeys(t *testing.T) {
	sm := memory.NewStore().NewSession()
	defer sm.Close()
	c := Config{TopologyName: "wc", TopologyID: "wc-1", Container: 1, Socket: "/s", StateManager: sm,
		Settings: spi.Config{KeyBufferMaxBytes: "16MiB", KeyLedgerMaxRoots: "1000", KeyMetricsInterval: "2s"}}
	s, err := c.check()
	if err != nil {
		t.Fatal(err)
	}
	if s.bufferMax != 16<<20 || s.ledgerMax != 1000 || s.metricsEvery != 2*time.Second {
		t.Errorf("buffer max %d, ledger max %d, metrics every %v", s.bufferMax, s.ledgerMax, s.metricsEvery)
	}
	c.Settings = spi.Config{KeyLedgerMaxRoots: "0"}
	if _, err := c.check(); err == nil {
		t.Errorf("%s 0 accepted", KeyLedgerMaxRoots)
	}
}
