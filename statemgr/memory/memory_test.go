package memory

import (
	"context"
	"testing"
	"time"

	"github.com/egret-stream/egret/core/spi"
	"github.com/egret-stream/egret/statemgr/statemgrtest"
)

func TestConformance(t *testing.T) {
	store := NewStore()
	statemgrtest.Run(t, func(*testing.T) spi.StateManager { return store.NewSession() })
}

func TestExpiry(t *testing.T) {
	store := NewStore(WithSessionTimeout(500 * time.Millisecond))
	statemgrtest.RunExpiry(t,
		func(*testing.T) spi.StateManager { return store.NewSession() },
		func(_ *testing.T, sm spi.StateManager) { sm.(*Session).Crash() })
}

func TestExpireReportsSessionLost(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	store := NewStore()
	s := store.NewSession()
	defer s.Close()
	if err := s.Create(ctx, "/eph", nil, true); err != nil {
		t.Fatal(err)
	}
	events, err := s.Watch(ctx, "/eph")
	if err != nil {
		t.Fatal(err)
	}
	s.Expire()
	var got []spi.EventType
	for len(got) < 2 {
		select {
		case e := <-events:
			got = append(got, e.Type)
		case <-ctx.Done():
			t.Fatalf("events so far %v", got)
		}
	}
	if got[0] != spi.EventSessionLost || got[1] != spi.EventDeleted {
		t.Fatalf("events = %v, want [SessionLost Deleted]", got)
	}
	// The session goes on as a new session and can recreate its node.
	if err := s.Create(ctx, "/eph", nil, true); err != nil {
		t.Fatal(err)
	}
}
