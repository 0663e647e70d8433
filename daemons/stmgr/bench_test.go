package stmgr_test

import (
	"bufio"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/egret-stream/egret/daemons/stmgr/stmgrtest"
	"github.com/egret-stream/egret/daemons/wire"
	"github.com/egret-stream/egret/proto/egretpb"
)

// BenchmarkTwoHop measures spout → stream manager → stream manager → bolt
// over loopback TCP and Unix sockets, everything in this process: the
// spout (task 1) in container 1, the only sink task in container 2.
func BenchmarkTwoHop(b *testing.B) {
	c := stmgrtest.NewCluster(b, 1, func(task int) int {
		if task == 1 {
			return 1
		}
		return 2
	})
	c.Count.Sink.CountOnly = true
	c.StartStMgr(1)
	c.StartStMgr(2)
	spout := c.StartInstance(1, 1)
	c.StartInstance(2, 2)
	c.WaitConnected(map[int]int{1: 1, 2: 1})
	b.ResetTimer()
	start, cpu0 := time.Now(), cpuTime(b)
	c.Count.Limit.Set(int64(b.N))
	stmgrtest.WaitFor(b, 5*time.Minute, "every tuple at the sink", func() bool { return c.Count.Sink.Total() >= b.N })
	elapsed, cpu := time.Since(start), cpuTime(b)-cpu0
	b.StopTimer()
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "tuples/s")
	// CPU of the whole process (both stream managers, both instances and
	// the test's pollers) per tuple: wall time is noisy on a shared machine.
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/tuple")
	if n := spout.Metrics.Batches.Load(); n > 0 {
		b.ReportMetric(float64(b.N)/float64(n), "tuples/batch")
	}
}

// cpuTime is the CPU time (user + system) this process used so far.
func cpuTime(tb testing.TB) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkTwoHopFrames drives raw data frames (100 tuples each) from a
// fake instance of task 1 through both stream managers to a fake instance
// of task 3: the stream managers' own cost. allocs/op is per frame.
func BenchmarkTwoHopFrames(b *testing.B) {
	c := stmgrtest.NewCluster(b, 2, twoContainers)
	c.StartStMgr(1)
	c.StartStMgr(2)
	c.WaitConnected(map[int]int{1: 0, 2: 0})
	src := rawInstance(b, c.Socket(1), 1)
	dst := rawInstance(b, c.Socket(2), 3)
	var records []byte
	for i := 0; i < 100; i++ {
		records = wire.AppendRecord(records, &wire.Header{SrcTask: 1, Stream: 1}, []byte{1, 2, 3, 4, 5, 6, 7, 8})
	}
	frame := wire.AppendDataFrame(nil, &wire.Batch{Dest: 3, Count: 100, Buf: records})
	got := make(chan int, 1)
	go func() {
		br := bufio.NewReaderSize(dst, 256<<10)
		var buf []byte
		n := 0
		for n < b.N {
			t, _, nb, err := wire.ReadFrame(br, buf, wire.DefaultMaxFrame)
			buf = nb
			if err != nil {
				break
			}
			if t == wire.FrameData {
				n++
			}
		}
		got <- n
	}()
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	bw := bufio.NewWriterSize(src, 64<<10)
	for i := 0; i < b.N; i++ {
		if _, err := bw.Write(frame); err != nil {
			b.Fatal(err)
		}
	}
	if err := bw.Flush(); err != nil {
		b.Fatal(err)
	}
	select {
	case n := <-got:
		if n != b.N {
			b.Fatalf("received %d of %d frames", n, b.N)
		}
	case <-time.After(5 * time.Minute):
		b.Fatal("frames did not arrive")
	}
	elapsed := time.Since(start)
	b.StopTimer()
	b.ReportMetric(float64(b.N)*100/elapsed.Seconds(), "tuples/s")
	b.ReportMetric(float64(b.N*len(frame))/elapsed.Seconds()/1e6, "MB/s")
}

// rawInstance registers task on a stream manager socket and returns the
// connection, positioned after the registration response.
func rawInstance(tb testing.TB, socket string, task int32) net.Conn {
	tb.Helper()
	conn, err := net.Dial("unix", socket)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = conn.Close() })
	if err := wire.WriteMessage(conn, &egretpb.RegisterInstanceRequest{TopologyId: stmgrtest.TopologyID, TaskId: task}); err != nil {
		tb.Fatal(err)
	}
	// Read the response byte by byte worth of frame so that nothing after
	// it is consumed by a buffer.
	_, m, _, err := wire.ReadMessage(bufio.NewReaderSize(&oneFrame{r: conn}, 16), nil, wire.DefaultMaxFrame)
	if err != nil {
		tb.Fatal(err)
	}
	if r, ok := m.(*egretpb.RegisterInstanceResponse); !ok || r.GetError() != "" {
		tb.Fatalf("registration answered %v", m)
	}
	return conn
}

// oneFrame reads from r one byte at a time, so a bufio.Reader over it
// never reads past the frame it is asked for.
type oneFrame struct{ r net.Conn }

func (o *oneFrame) Read(p []byte) (int, error) { return o.r.Read(p[:1]) }
