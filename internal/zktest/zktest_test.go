package zktest

import (
	"testing"
)

func TestStartStopRestart(t *testing.T) {
	s := StartServer(t)
	if !Ready(s.Addr) {
		t.Fatalf("server at %s not ready after Start", s.Addr)
	}
	s.Stop()
	if Ready(s.Addr) {
		t.Fatalf("server at %s still answers after Stop", s.Addr)
	}
	s.Restart()
	if !Ready(s.Addr) {
		t.Fatalf("server at %s not ready after Restart", s.Addr)
	}
}
