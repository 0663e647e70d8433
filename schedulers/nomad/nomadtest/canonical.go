package nomadtest

import (
	"slices"
	"sort"
	"strings"

	"github.com/hashicorp/nomad/api"
)

// serverDefaults does what a Nomad 1.6 server does to a registered job
// after the HTTP endpoint's Canonicalize, as far as it shows in the job
// read back: its own defaults (node pool, host networks, zero resources),
// no fields it does not know (an artifact's insecure flag, a template's
// once, the Consul cluster of a group or service: newer than 1.6), and the constraints a job implies (the signals
// its tasks need, the service discovery its services use).
func serverDefaults(j *api.Job) {
	if deref(j.NodePool, "") == "" {
		j.NodePool = ptr("default")
	}
	if j.DispatchIdempotencyToken == nil {
		j.DispatchIdempotencyToken = ptr("")
	}
	for _, tg := range j.TaskGroups {
		if tg.Consul == nil {
			tg.Consul = &api.Consul{}
		}
		tg.Consul.Cluster, tg.Consul.Partition = "", ""
		for _, n := range tg.Networks {
			if n.MBits == nil {
				n.MBits = ptr(0)
			}
			for i := range n.DynamicPorts {
				if n.DynamicPorts[i].HostNetwork == "" {
					n.DynamicPorts[i].HostNetwork = "default"
				}
			}
			for i := range n.ReservedPorts {
				if n.ReservedPorts[i].HostNetwork == "" {
					n.ReservedPorts[i].HostNetwork = "default"
				}
			}
		}
		for _, svc := range tg.Services {
			svc.Cluster = ""
		}
		for _, t := range tg.Tasks {
			if r := t.Resources; r != nil {
				for _, f := range []**int{&r.DiskMB, &r.IOPS, &r.MemoryMaxMB} {
					if *f == nil {
						*f = ptr(0)
					}
				}
			}
			for _, a := range t.Artifacts {
				a.GetterInsecure = nil
			}
			for _, tmpl := range t.Templates {
				tmpl.Once = nil
			}
		}
		impliedConstraints(tg)
	}
}

// impliedConstraints adds the constraints Nomad's job mutator adds to a
// group, in its order: the signals its tasks are stopped with, Nomad's
// service discovery (and its checks), Consul's.
func impliedConstraints(tg *api.TaskGroup) {
	var signals []string
	for _, t := range tg.Tasks {
		if t.KillSignal != "" && !slices.Contains(signals, t.KillSignal) {
			signals = append(signals, t.KillSignal)
		}
	}
	sort.Strings(signals)
	var nomadSvc, nomadChecks, consulSvc bool
	for _, svc := range tg.Services {
		if svc.Provider == "nomad" {
			nomadSvc = true
			nomadChecks = nomadChecks || len(svc.Checks) > 0
		} else {
			consulSvc = true
		}
	}
	add := func(l, op, r string) {
		for _, c := range tg.Constraints {
			if c.LTarget == l && c.Operand == op && c.RTarget == r {
				return
			}
		}
		tg.Constraints = append(tg.Constraints, &api.Constraint{LTarget: l, Operand: op, RTarget: r})
	}
	if len(signals) > 0 {
		add("${attr.os.signals}", "set_contains", strings.Join(signals, ","))
	}
	if nomadSvc {
		add("${attr.nomad.service_discovery}", "=", "true")
	}
	if nomadChecks {
		add("${attr.nomad.version}", "semver", ">= 1.4.0")
	}
	if consulSvc {
		add("${attr.consul.version}", "semver", ">= 1.7.0")
	}
}
