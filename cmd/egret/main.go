// Command egret is Egret's command line and the container payload's daemons.
package main

import (
	"os"

	"github.com/egret-stream/egret/cli"
)

func main() { os.Exit(cli.Main(os.Args[1:])) }
