// Command hogbolt is the resource isolation topology (issue 19): in one
// container, an unthrottled spout "source" feeds a bolt "work" that counts
// what it executes, while a slow spout "tick" (10 tuples/s) feeds a bolt
// "hog" that, once told to, allocates without bound, and a bolt "spin"
// that, once told to, spins on every core. Every component sets its
// resources with SetResources, so the packing plan and the executor's
// limits come from the API.
//
//	egret submit local ./test/e2e/testdata/hogbolt -- --state /tmp/iso
//
// The hog starts allocating (1 MiB every 2ms, all kept) when the file
// <state>/hog exists, the spinner spinning (GOMAXPROCS raised to every
// CPU, whatever the executor set) when <state>/spin exists; both check at
// start and every 100ms, so a restarted instance misbehaves again.
//
// Resources (cpu, ram, disk): source 0.5, 192MiB, 64MiB; work 1, 192MiB,
// 64MiB; tick 0.25, 96MiB, 16MiB; hog 0.5, 128MiB, 16MiB; spin 0.25,
// 96MiB, 16MiB.
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sync/atomic"
	"time"

	"github.com/egret-stream/egret/api"
	"github.com/egret-stream/egret/api/runner"
)

const keyState = "hogbolt.state.dir"

// MiB is a mebibyte.
const MiB = 1 << 20

func main() {
	fs := flag.NewFlagSet("hogbolt", flag.ContinueOnError)
	state := fs.String("state", "", "directory of the control files (required)")
	own, rest := runner.SplitArgs(os.Args[1:], fs)
	if err := fs.Parse(own); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(runner.ExitUsage)
	}
	b := api.NewTopologyBuilder("hogbolt")
	b.SetContainers(1)
	if *state != "" {
		dir, err := filepath.Abs(*state)
		if err != nil {
			fmt.Fprintf(os.Stderr, "hogbolt: --state: %v\n", err)
			os.Exit(runner.ExitUsage)
		}
		b.SetConfig(keyState, dir)
	}
	b.SetSpout("source", func() api.Spout { return &source{} }, 1).SetResources(0.5, 192*MiB, 64*MiB)
	b.SetBolt("work", func() api.Bolt { return &work{} }, 1).ShuffleGrouping("source").SetResources(1, 192*MiB, 64*MiB)
	b.SetSpout("tick", func() api.Spout { return &tick{} }, 1).SetResources(0.25, 96*MiB, 16*MiB)
	b.SetBolt("hog", func() api.Bolt { return &misbehaving{file: "hog", act: hog} }, 1).ShuffleGrouping("tick").SetResources(0.5, 128*MiB, 16*MiB)
	b.SetBolt("spin", func() api.Bolt { return &misbehaving{file: "spin", act: spin} }, 1).ShuffleGrouping("tick").SetResources(0.25, 96*MiB, 16*MiB)
	os.Exit(runner.MainArgs(b, rest, os.Stdout, os.Stderr))
}

// source emits increasing ids as fast as the runtime takes them.
type source struct {
	api.BaseSpout
	out  api.SpoutCollector
	next int64
}

func (s *source) Open(_ api.Context, out api.SpoutCollector) error {
	s.out = out
	return nil
}

func (s *source) NextTuple() {
	s.out.Emit(api.Values{s.next}, nil)
	s.next++
}

func (s *source) DeclareOutputFields(d api.OutputDeclarer) { d.Declare("id") }

// tick emits 10 tuples a second.
type tick struct {
	api.BaseSpout
	out  api.SpoutCollector
	last time.Time
}

func (s *tick) Open(_ api.Context, out api.SpoutCollector) error {
	s.out = out
	return nil
}

func (s *tick) NextTuple() {
	if time.Since(s.last) < 100*time.Millisecond {
		time.Sleep(time.Millisecond)
		return
	}
	s.last = time.Now()
	s.out.Emit(api.Values{s.last.UnixNano()}, nil)
}

func (s *tick) DeclareOutputFields(d api.OutputDeclarer) { d.Declare("at") }

// work counts the tuples it executes (instance.executed in the metrics).
type work struct {
	api.BaseBolt
	n int64
}

func (b *work) Execute(t api.Tuple) { b.n += t.Int64(0) & 1 }

// misbehaving runs act once the control file <state>/<file> exists.
type misbehaving struct {
	api.BaseBolt
	file    string
	act     func()
	started atomic.Bool
}

func (b *misbehaving) Prepare(ctx api.Context, _ api.BoltCollector) error {
	dir := ctx.Config(keyState)
	if dir == "" {
		return errors.New("config " + keyState + " is required: submit with --state DIR")
	}
	path := filepath.Join(dir, b.file)
	go func() {
		for {
			if _, err := os.Stat(path); err == nil && b.started.CompareAndSwap(false, true) {
				b.act()
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
	}()
	return nil
}

func (b *misbehaving) Execute(api.Tuple) {}

// hog allocates 1 MiB every 2ms and keeps it all.
func hog() {
	// Kept in a struct the loop reads, so no tool thinks it unused.
	keep := &struct{ chunks [][]byte }{}
	for {
		m := make([]byte, MiB)
		for i := 0; i < len(m); i += 4096 {
			m[i] = 1
		}
		keep.chunks = append(keep.chunks, m)
		time.Sleep(2 * time.Millisecond)
	}
}

var spinSink atomic.Int64

// spin raises GOMAXPROCS to every CPU and keeps them all busy.
func spin() {
	runtime.GOMAXPROCS(runtime.NumCPU())
	for range runtime.NumCPU() {
		go func() {
			for {
				spinSink.Add(1)
			}
		}()
	}
}

func (b *work) DeclareOutputFields(api.OutputDeclarer) {}

func (b *misbehaving) DeclareOutputFields(api.OutputDeclarer) {}
