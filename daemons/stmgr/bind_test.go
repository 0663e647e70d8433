package stmgr_test

import (
	"fmt"
	"net"
	"path/filepath"
	"testing"
	"time"

	"github.com/egret-stream/egret/daemons/stmgr"
	"github.com/egret-stream/egret/statemgr/memory"
)

// TestBindHost: with BindHost the peer port listens on that address only
// (in a Nomad container: the address Nomad gave the port), else on all.
func TestBindHost(t *testing.T) {
	listen := func(bind string) *stmgr.StMgr {
		t.Helper()
		s, err := stmgr.New(stmgr.Config{
			TopologyName: "count", TopologyID: "count-1", Container: 1, Host: "127.0.0.1", BindHost: bind,
			Socket: filepath.Join(t.TempDir(), "stmgr.sock"), StateManager: memory.NewStore().NewSession(),
		}, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close() })
		return s
	}
	reaches := func(s *stmgr.StMgr, ip string) bool {
		c, err := net.DialTimeout("tcp", fmt.Sprintf("%s:%d", ip, s.Port()), 5*time.Second)
		if err == nil {
			c.Close()
		}
		return err == nil
	}
	all := listen("")
	if !reaches(all, "127.0.0.2") {
		t.Skip("127.0.0.2 is not a loopback address here")
	}
	one := listen("127.0.0.1")
	if !reaches(one, "127.0.0.1") || reaches(one, "127.0.0.2") {
		t.Errorf("bound to 127.0.0.1: reaches 127.0.0.1 %v, 127.0.0.2 %v; want only 127.0.0.1", reaches(one, "127.0.0.1"), reaches(one, "127.0.0.2"))
	}
}
