// Command filtermap is a streamlet filter/map chain: two sources emit
// the numbers 1..N (task i emits i*N+1 .. (i+1)*N), a filter keeps the
// primes, a map squares them, another map formats them, and a sink
// prints "prime P SQUARE". With fusing (the default) the chain runs
// inside the source component and the sink in a bolt; --separate gives
// every stage its own component.
//
//	go run ./examples/filtermap --local --numbers 1000 --duration 2s
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/egret-stream/egret/api"
	"github.com/egret-stream/egret/api/runner"
	"github.com/egret-stream/egret/api/streamlet"
)

// IsPrime reports whether n is prime.
func IsPrime(n int64) bool {
	if n < 2 {
		return false
	}
	for d := int64(2); d*d <= n; d++ {
		if n%d == 0 {
			return false
		}
	}
	return true
}

// Pipeline builds the chain.
func Pipeline(numbers int64, separate bool) *streamlet.Builder {
	b := streamlet.New("filtermap")
	// [2]int64 is no built-in tuple type: when square and format run in
	// different components (--separate) it crosses processes through
	// this codec; fused, it never leaves the component.
	b.RegisterType(1, [2]int64{}, streamlet.JSONCodec[[2]int64]{})
	if separate {
		b.DisableFusing()
	}
	nums := streamlet.Source(b, "numbers", func(ctx api.Context) streamlet.Supplier[int64] {
		next, last := int64(ctx.TaskIndex())*numbers+1, int64(ctx.TaskIndex()+1)*numbers
		return func() (int64, bool) {
			if next > last {
				return 0, false
			}
			next++
			return next - 1, true
		}
	}).Parallelism(2)
	primes := streamlet.Filter(nums, IsPrime).Named("primes")
	squares := streamlet.Map(primes, func(p int64) [2]int64 { return [2]int64{p, p * p} }).Named("square")
	text := streamlet.Map(squares, func(s [2]int64) string { return fmt.Sprintf("prime %d %d", s[0], s[1]) }).Named("format")
	streamlet.Consume(text, func(s string) { fmt.Println(s) }).Named("print")
	return b
}

func main() {
	var numbers int64
	var containers int
	var separate bool
	fs := flag.NewFlagSet("filtermap", flag.ContinueOnError)
	fs.Int64Var(&numbers, "numbers", 1000, "numbers per source task")
	fs.IntVar(&containers, "containers", 1, "containers in a cluster")
	fs.BoolVar(&separate, "separate", false, "one component per stage (no fusing)")
	own, rest := runner.SplitArgs(os.Args[1:], fs)
	if err := fs.Parse(own); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(runner.ExitUsage)
	}
	tb, err := Pipeline(numbers, separate).Compile()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(runner.ExitFailure)
	}
	tb.SetContainers(containers)
	os.Exit(runner.MainArgs(tb, rest, os.Stdout, os.Stderr))
}
