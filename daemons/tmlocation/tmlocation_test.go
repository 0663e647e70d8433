package tmlocation

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/egret-stream/egret/core/spi"
	"github.com/egret-stream/egret/proto/egretpb"
)

func TestWriteReadWatch(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tmanager-location")
	f := File{Path: path, Poll: 5 * time.Millisecond}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if _, err := f.TManagerLocation(ctx, "wc"); !errors.Is(err, spi.ErrNotFound) {
		t.Fatalf("no file: %v, want ErrNotFound", err)
	}
	events, err := f.WatchTManager(ctx, "wc")
	if err != nil {
		t.Fatal(err)
	}
	changed := func() {
		t.Helper()
		select {
		case <-events:
		case <-time.After(30 * time.Second):
			t.Fatal("no event for a change of the file")
		}
	}
	if err := Write(path, &egretpb.TManagerLocation{TopologyName: "wc", Host: "h1", ServerPort: 7}); err != nil {
		t.Fatal(err)
	}
	changed()
	loc, err := f.TManagerLocation(ctx, "wc")
	if err != nil || loc.GetHost() != "h1" || loc.GetServerPort() != 7 {
		t.Fatalf("read %v, %v", loc, err)
	}
	if _, err := f.TManagerLocation(ctx, "other"); !errors.Is(err, spi.ErrCorrupt) {
		t.Fatalf("another topology's location: %v, want ErrCorrupt", err)
	}
	if err := Write(path, nil); err != nil {
		t.Fatal(err)
	}
	changed()
	if _, err := f.TManagerLocation(ctx, "wc"); !errors.Is(err, spi.ErrNotFound) {
		t.Fatalf("removed: %v, want ErrNotFound", err)
	}
	if err := Write(path, nil); err != nil {
		t.Fatalf("removing twice: %v", err)
	}
	if err := os.WriteFile(path, []byte{0xff, 0xff}, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := f.TManagerLocation(ctx, "wc"); !errors.Is(err, spi.ErrCorrupt) {
		t.Fatalf("garbage: %v, want ErrCorrupt", err)
	}
	cancel()
	for range events { // closed when the watch ends
	}
	entries, _ := os.ReadDir(filepath.Dir(path))
	if len(entries) != 1 {
		t.Fatalf("directory holds %d entries, want the file only (no temporary files left)", len(entries))
	}
}
