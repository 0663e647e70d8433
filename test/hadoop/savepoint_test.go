package hadoop

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	ckpthdfs "github.com/egret-stream/egret/checkpoints/hdfs"
	"github.com/egret-stream/egret/core/keygroup"
	"github.com/egret-stream/egret/core/spi"
	"github.com/egret-stream/egret/core/statebackend"
	"github.com/egret-stream/egret/daemons/ckptio"
	"github.com/egret-stream/egret/daemons/savepoint"
	"github.com/egret-stream/egret/test/savepointtest"
)

// TestSavepointOnHDFS: a checkpoint of a local cluster (a pebble task's
// files, a heap task's stream, a spout's operator state) is saved to an
// hdfs:// savepoint URI on the real NameNode, read back, checked and
// seeded into a local checkpoint storage (the restore side of `egret
// submit --from-savepoint` on local), where each task's keyed stream
// holds its groups' entries; delete removes it from HDFS. The commands'
// end-to-end path (a savepoint from a topology running on YARN) is not
// run here.
func TestSavepointOnHDFS(t *testing.T) {
	c := needCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	local := savepointtest.Localfs(t, t.TempDir())
	savepointtest.Checkpoint(t, local)
	topo, pp := savepointtest.Topology("wc", 2)

	loc, err := savepoint.Parse(fmt.Sprintf("hdfs://%s/egret/savepoints/%s/sp-1", c.NameNode, randomName("sp")))
	if err != nil {
		t.Fatal(err)
	}
	st, err := ckpthdfs.New(loc.Config(checkpointConfig("unused:1", "/unused")), zaptest.NewLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	hdfsStore := st.(savepoint.Storage)
	m, err := savepoint.Write(ctx, savepoint.Source{Storage: local, Topology: topo, Plan: pp, Checkpoint: 5}, hdfsStore, loc.Name, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := dfs(t).Stat(loc.Root + "/" + loc.Name + "/files/" + savepoint.ManifestFile); err != nil {
		t.Fatalf("no manifest in HDFS: %v", err)
	}
	got, err := savepoint.Read(ctx, hdfsStore, loc)
	if err != nil {
		t.Fatal(err)
	}
	if err := savepoint.Verify(ctx, hdfsStore, loc, got); err != nil {
		t.Fatal(err)
	}
	if got.Size() != m.Size() || len(got.Components) != 2 {
		t.Fatalf("read back %+v", got)
	}

	target := savepointtest.Localfs(t, t.TempDir())
	nt, np := savepointtest.Topology("wc-restored", 2)
	if err := savepoint.Check(got, nt, np, false); err != nil {
		t.Fatal(err)
	}
	if _, _, err := savepoint.Seed(ctx, got, hdfsStore, loc.Name, target, nt, np); err != nil {
		t.Fatal(err)
	}
	for i, backend := range []string{"pebble", "heap"} {
		task := int32(2 + i)
		b, err := target.Load(ctx, spi.CheckpointKey{Topology: "wc-restored", Checkpoint: 5, Task: task})
		if err != nil {
			t.Fatal(err)
		}
		tm, err := ckptio.UnmarshalManifest(b)
		if err != nil {
			t.Fatal(err)
		}
		kb, err := statebackend.Open("heap", statebackend.Options{MaxParallelism: tm.MaxParallelism, Groups: tm.Groups})
		if err != nil {
			t.Fatal(err)
		}
		r, err := target.OpenFile(ctx, "wc-restored", tm.Files[0].Name)
		if err != nil {
			t.Fatal(err)
		}
		err = kb.Restore(r)
		_ = r.Close()
		if err != nil {
			t.Fatal(err)
		}
		groups := keygroup.RangeOf(i, 2, savepointtest.MaxParallelism)
		for g := groups.Start; g < groups.End; g++ {
			v, ok, err := kb.Get(savepointtest.Key(g, backend), nil)
			if err != nil || !ok || !bytes.Equal(v, []byte{byte(g)}) {
				t.Fatalf("task %d (saved on %s), group %d: %v %v %v", task, backend, g, v, ok, err)
			}
		}
	}
	if err := savepoint.Delete(ctx, hdfsStore, loc); err != nil {
		t.Fatal(err)
	}
	if _, err := savepoint.Read(ctx, hdfsStore, loc); !errors.Is(err, spi.ErrNotFound) {
		t.Fatalf("read after delete: %v", err)
	}
}
