// Command egret-scheduler-kubernetes serves Egret's Kubernetes scheduler as
// an external plugin: put it in the plugin directory
// (egret.plugin.directory) and select it with egret.scheduler. The same
// scheduler is built into egret as "kubernetes".
package main

import (
	"github.com/egret-stream/egret/plugins"
	"github.com/egret-stream/egret/schedulers/kubernetes"
)

func main() { plugins.ServeScheduler(kubernetes.New) }
