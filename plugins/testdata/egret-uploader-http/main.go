// Command egret-uploader-http serves the built-in http uploader as a
// plugin, to run the uploader conformance suite across the plugin
// boundary against the real package server.
package main

import (
	"github.com/egret-stream/egret/core/spi"
	"github.com/egret-stream/egret/plugins"

	_ "github.com/egret-stream/egret/uploaders/http"
)

func main() { plugins.ServeBuiltin(spi.KindUploader, "http") }
