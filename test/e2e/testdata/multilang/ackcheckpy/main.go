// Command ackcheckpy is the ackcheck topology (see package ackcheck) with
// its source spout and its relay bolt written in Python with pystorm
// (resources/source.py and resources/relay.py of testdata/multilang): a
// pystorm spout feeds the Go fanout bolt, which feeds the pystorm relay,
// which feeds the Go sink. Ship the resources and give the virtualenv:
//
//	egret submit --resources test/e2e/testdata/multilang/resources local ./ackcheckpy -- \
//		--state /tmp/ack --set topology.multilang.path=$HOME/.cache/egret/pyvenv/bin
//
// It takes the flags of ackcheck; the relay reads the settings
// ackcheck.relay.fail.every and ackcheck.relay.fault (see relay.py).
package main

import (
	"fmt"
	"os"

	"github.com/egret-stream/egret/api/runner"
	"github.com/egret-stream/egret/bench/topologies/ackcheck/ackcheck"
)

func main() {
	o, rest, err := ackcheck.ParseArgs("ackcheckpy", os.Args[1:])
	if err != nil {
		fmt.Fprintf(os.Stderr, "ackcheckpy: %v\n", err)
		os.Exit(runner.ExitUsage)
	}
	o.ShellSource = []string{"python3", "source.py"}
	o.ShellRelay = []string{"python3", "relay.py"}
	b, err := ackcheck.Builder(o)
	if err != nil {
		fmt.Fprintf(os.Stderr, "ackcheckpy: %v\n", err)
		os.Exit(runner.ExitUsage)
	}
	os.Exit(runner.MainArgs(b, rest, os.Stdout, os.Stderr))
}
