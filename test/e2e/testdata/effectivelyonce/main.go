// Command effectivelyonce is word count asking for effectively-once
// delivery, for the end-to-end test that clusters refuse it (it is not
// built yet).
package main

import (
	"os"

	"github.com/egret-stream/egret"
	"github.com/egret-stream/egret/core/topology"
	"github.com/egret-stream/egret/examples/wordcount/wordcount"
)

func main() {
	b := wordcount.Builder(wordcount.Options{})
	b.SetDeliveryMode(topology.EffectivelyOnce)
	os.Exit(egret.RunArgs(b, os.Args[1:], os.Stdout, os.Stderr))
}
