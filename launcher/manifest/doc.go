// Package manifest reads the topology manifests of `egret apply`: YAML
// files that list topologies with the cluster they run on, the binary or
// Go package that defines them, its arguments, config properties and
// scale overrides.
//
//	topologies:
//	  - name: orders            # the name the binary defines (checked)
//	    cluster: prod/etl       # cluster[/role[/env]]
//	    binary: ./cmd/orders    # a topology binary or a Go package
//	    args: [--rate, "500"]
//	    config:                 # --config-property of every command
//	      egret.metrics.sinks: file,tmanager,prometheus
//	    parallelism: {enrich: 4} # egret update --component-parallelism
//	    containers: 3           # egret update --container-number
//
// Every error names the file and line.
package manifest
