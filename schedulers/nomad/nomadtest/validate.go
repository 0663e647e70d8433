package nomadtest

import (
	"encoding/hex"
	"fmt"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/nomad/api"
)

var (
	envSafe     = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	serviceName = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$`)
	interpVar   = regexp.MustCompile(`\$\{([^}]*)\}`)
	// Runtime variables Nomad interpolates that do not name a port.
	nomadVars = []string{"NOMAD_TASK_DIR", "NOMAD_ALLOC_DIR", "NOMAD_SECRETS_DIR", "NOMAD_ALLOC_ID", "NOMAD_SHORT_ALLOC_ID",
		"NOMAD_ALLOC_NAME", "NOMAD_ALLOC_INDEX", "NOMAD_GROUP_NAME", "NOMAD_TASK_NAME", "NOMAD_JOB_ID", "NOMAD_JOB_NAME",
		"NOMAD_JOB_PARENT_ID", "NOMAD_DC", "NOMAD_NAMESPACE", "NOMAD_REGION", "NOMAD_CPU_LIMIT", "NOMAD_CPU_CORES",
		"NOMAD_MEMORY_LIMIT", "NOMAD_MEMORY_MAX_LIMIT", "NOMAD_PARENT_CGROUP", "NOMAD_UNIX_ADDR"}
	portVarPrefixes = []string{"NOMAD_PORT_", "NOMAD_HOST_PORT_", "NOMAD_IP_", "NOMAD_ADDR_", "NOMAD_HOST_IP_", "NOMAD_HOST_ADDR_", "NOMAD_ALLOC_PORT_", "NOMAD_ALLOC_IP_", "NOMAD_ALLOC_ADDR_"}
	decompressors   = []string{"bz2", "gz", "xz", "zip", "tar", "tar.bz2", "tar.gz", "tbz2", "tgz", "txz", "tar.xz", "zst", "tar.zst", "tzst", "false"}
	checksumLens    = map[string]int{"md5": 32, "sha1": 40, "sha256": 64, "sha512": 128}
)

// validateJob checks a job the way Nomad's job validation does, for the
// fields Egret uses, plus interpolation references to ports.
func validateJob(j *api.Job) []string {
	var errs []string
	add := func(format string, args ...any) { errs = append(errs, fmt.Sprintf(format, args...)) }
	id := deref(j.ID, "")
	switch {
	case id == "":
		add("Missing job ID")
	case strings.ContainsAny(id, " \x00"):
		add("Job ID contains a space or null character")
	}
	if deref(j.Name, "") == "" {
		add("Missing job name")
	}
	if t := deref(j.Type, api.JobTypeService); !slices.Contains([]string{"service", "batch", "system", "sysbatch"}, t) {
		add("Invalid job type: %q", t)
	}
	if p := deref(j.Priority, 50); p < 1 || p > 100 {
		add("Job priority must be between [1, 100]")
	}
	for _, dc := range j.Datacenters {
		if dc == "" {
			add("Job datacenter must be non-empty string")
		}
	}
	for k := range j.Meta {
		if k == "" {
			add("Job meta keys must be non-empty")
		}
	}
	if len(j.TaskGroups) == 0 {
		add("Missing job task groups")
	}
	seen := map[string]bool{}
	for i, tg := range j.TaskGroups {
		name := deref(tg.Name, "")
		if name == "" {
			add("Job task group %d missing name", i+1)
			continue
		}
		if seen[name] {
			add("Job task group %d redefines '%s' from group %d", i+1, name, i)
		}
		seen[name] = true
		if ge := validateGroup(tg, deref(j.Type, api.JobTypeService)); len(ge) > 0 {
			add("Task group %s validation failed: %s", name, formatErrors(ge))
		}
	}
	return errs
}

// formatErrors renders errors as Nomad's go-multierror does (a nested
// list is rendered inside its parent's line, so a Nomad error body has
// many lines).
func formatErrors(errs []string) string {
	if len(errs) == 1 {
		return fmt.Sprintf("1 error occurred:\n\t* %s\n\n", errs[0])
	}
	points := make([]string, len(errs))
	for i, e := range errs {
		points[i] = "* " + e
	}
	return fmt.Sprintf("%d errors occurred:\n\t%s\n\n", len(errs), strings.Join(points, "\n\t"))
}

// validateUpdate checks a group's update block (after the job's was
// merged into it) with Nomad's rules and messages.
func validateUpdate(u *api.UpdateStrategy, jobType string) []string {
	var errs []string
	add := func(format string, args ...any) { errs = append(errs, fmt.Sprintf(format, args...)) }
	if jobType != api.JobTypeService && jobType != api.JobTypeSystem {
		return []string{fmt.Sprintf("Job type %q does not allow update block", jobType)}
	}
	var (
		check                              = deref(u.HealthCheck, "")
		maxParallel, canary                = deref(u.MaxParallel, 0), deref(u.Canary, 0)
		minHealthy, healthy, progress, stg = deref(u.MinHealthyTime, 0), deref(u.HealthyDeadline, 0), deref(u.ProgressDeadline, 0), deref(u.Stagger, 0)
	)
	if !slices.Contains([]string{"checks", "task_states", "manual"}, check) {
		add("Invalid health check given: %q", check)
	}
	if maxParallel < 0 {
		add("Max parallel can not be less than zero: %d < 0", maxParallel)
	}
	if canary < 0 {
		add("Canary count can not be less than zero: %d < 0", canary)
	}
	if canary == 0 && deref(u.AutoPromote, false) {
		add("Auto Promote requires a Canary count greater than zero")
	}
	if minHealthy < 0 {
		add("Minimum healthy time may not be less than zero: %v", minHealthy)
	}
	if healthy <= 0 {
		add("Healthy deadline must be greater than zero: %v", healthy)
	}
	if progress < 0 {
		add("Progress deadline must be zero or greater: %v", progress)
	}
	if minHealthy >= healthy {
		add("Minimum healthy time must be less than healthy deadline: %v > %v", minHealthy, healthy)
	}
	if progress != 0 && healthy >= progress {
		add("Healthy deadline must be less than progress deadline: %v > %v", healthy, progress)
	}
	if stg <= 0 {
		add("Stagger must be greater than zero: %v", stg)
	}
	if len(errs) == 0 {
		return nil
	}
	return []string{formatErrors(errs)}
}

func validateGroup(tg *api.TaskGroup, jobType string) []string {
	var errs []string
	add := func(format string, args ...any) { errs = append(errs, fmt.Sprintf(format, args...)) }
	if c := deref(tg.Count, 1); c < 0 {
		add("Task group count can't be negative")
	}
	if len(tg.Tasks) == 0 {
		add("Missing tasks for task group")
	}
	if rp := tg.RestartPolicy; rp != nil {
		mode := deref(rp.Mode, "fail")
		if mode != "delay" && mode != "fail" {
			add("Unsupported restart mode: %q", mode)
		}
		attempts, interval, delay := deref(rp.Attempts, 0), deref(rp.Interval, 0), deref(rp.Delay, 0)
		if attempts < 0 || interval < 0 || delay < 0 {
			add("Restart policy values can't be negative")
		}
		if attempts > 0 && time.Duration(attempts)*delay > interval {
			add("Nomad can't restart the TaskGroup %d times in an interval of %v with a delay of %v", attempts, interval, delay)
		}
	}
	if rp := tg.ReschedulePolicy; rp != nil {
		fn := deref(rp.DelayFunction, "exponential")
		if !slices.Contains([]string{"constant", "exponential", "fibonacci"}, fn) {
			add("Invalid delay function %q, must be one of [constant exponential fibonacci]", fn)
		}
		delay, maxDelay := deref(rp.Delay, 30*time.Second), deref(rp.MaxDelay, time.Hour)
		if delay < 5*time.Second {
			add("Delay cannot be less than 5s (got %v)", delay)
		}
		if fn != "constant" && maxDelay < delay {
			add("Max Delay cannot be less than Delay %v (got %v)", delay, maxDelay)
		}
		if !deref(rp.Unlimited, false) && deref(rp.Attempts, 0) > 0 && deref(rp.Interval, 0) <= 0 {
			add("Interval must be a non zero value if Attempts > 0")
		}
	}
	if tg.Update != nil {
		errs = append(errs, validateUpdate(tg.Update, jobType)...)
	}
	if d := tg.EphemeralDisk; d != nil && deref(d.SizeMB, 300) < 0 {
		add("Minimum DiskMB value is 0; got %d", *d.SizeMB)
	}
	ports := map[string]bool{}
	if len(tg.Networks) > 1 {
		add("Only one network resource may be specified per task group")
	}
	for _, n := range tg.Networks {
		if n.Mode != "" && n.Mode != "host" && n.Mode != "bridge" && n.Mode != "none" && !strings.HasPrefix(n.Mode, "cni/") {
			add("Unsupported network mode %q", n.Mode)
		}
		for _, p := range append(slices.Clone(n.ReservedPorts), n.DynamicPorts...) {
			if !envSafe.MatchString(p.Label) {
				add("Port label %q is not a valid environment variable name", p.Label)
			}
			if ports[p.Label] {
				add("Port label %q already in use", p.Label)
			}
			ports[p.Label] = true
		}
	}
	for _, svc := range tg.Services {
		if !serviceName.MatchString(svc.Name) {
			add("Service name must be valid per RFC 1123 and can contain only alphanumeric characters or dashes: %q", svc.Name)
		}
		if svc.PortLabel != "" && !ports[svc.PortLabel] {
			add("Service %s: port label %q not found in the group network", svc.Name, svc.PortLabel)
		}
		if p := svc.Provider; p != "" && p != "consul" && p != "nomad" {
			add("Service %s: invalid provider %q", svc.Name, p)
		}
		for _, c := range svc.Checks {
			if !slices.Contains([]string{"tcp", "http", "script", "grpc"}, c.Type) {
				add("Service %s check %q: invalid type %q", svc.Name, c.Name, c.Type)
			}
			if c.Interval < time.Second || c.Timeout < time.Second {
				add("Service %s check %q: interval and timeout must be at least 1s", svc.Name, c.Name)
			}
		}
	}
	tasks := map[string]bool{}
	for i, t := range tg.Tasks {
		if t.Name == "" {
			add("Task %d missing name", i+1)
			continue
		}
		if tasks[t.Name] {
			add("Task %d redefines '%s'", i+1, t.Name)
		}
		tasks[t.Name] = true
		if te := validateTask(t, ports); len(te) > 0 {
			add("Task %s validation failed: %s", t.Name, formatErrors(te))
		}
	}
	return errs
}

func validateTask(t *api.Task, ports map[string]bool) []string {
	var errs []string
	add := func(format string, args ...any) { errs = append(errs, fmt.Sprintf(format, args...)) }
	if strings.Contains(t.Name, "/") {
		add("Task name cannot include slashes")
	}
	switch t.Driver {
	case "":
		add("Missing task driver")
	case "raw_exec", "exec":
		if s, ok := t.Config["command"].(string); !ok || s == "" {
			add("Missing required field \"command\" in driver config")
		}
		if a, ok := t.Config["args"]; ok && !isStringList(a) {
			add("Driver config \"args\" must be a list of strings")
		}
	case "docker":
		if s, ok := t.Config["image"].(string); !ok || s == "" {
			add("Missing required field \"image\" in driver config")
		}
		if p, ok := t.Config["ports"]; ok {
			if !isStringList(p) {
				add("Driver config \"ports\" must be a list of port labels")
			} else {
				for _, l := range stringList(p) {
					if !ports[l] {
						add("Port %q not found, check network block", l)
					}
				}
			}
		}
	}
	if r := t.Resources; r != nil {
		if c := deref(r.CPU, 100); c < 1 {
			add("Minimum CPU value is 1; got %d", c)
		}
		if m := deref(r.MemoryMB, 300); m < 10 {
			add("Minimum MemoryMB value is 10; got %d", m)
		}
	}
	if t.KillTimeout != nil && *t.KillTimeout < 0 {
		add("KillTimeout must be a positive value")
	}
	for i, a := range t.Artifacts {
		src := deref(a.GetterSource, "")
		if src == "" {
			add("Artifact %d: source must be specified", i+1)
		}
		dest := deref(a.RelativeDest, "local/")
		if path.IsAbs(dest) || strings.HasPrefix(path.Clean(dest), "../..") {
			add("Artifact %d: destination escapes allocation directory", i+1)
		}
		if m := deref(a.GetterMode, "any"); m != "any" && m != "file" && m != "dir" {
			add("Artifact %d: invalid artifact mode %q; must be one of: any, file, dir", i+1, m)
		}
		for k, v := range a.GetterOptions {
			switch k {
			case "checksum":
				typ, sum, ok := strings.Cut(v, ":")
				if n, known := checksumLens[typ]; !ok || !known || len(sum) != n || !isHex(sum) {
					add("Artifact %d: checksum %q is not <type>:<hex> with type md5, sha1, sha256 or sha512", i+1, v)
				}
			case "archive":
				if !slices.Contains(decompressors, v) {
					add("Artifact %d: unknown archive type %q", i+1, v)
				}
			}
		}
	}
	for i, tmpl := range t.Templates {
		if deref(tmpl.DestPath, "") == "" {
			add("Template %d: must specify a destination", i+1)
		}
		if (deref(tmpl.EmbeddedTmpl, "") == "") == (deref(tmpl.SourcePath, "") == "") {
			add("Template %d: must specify exactly one of source or data", i+1)
		}
		if m := deref(tmpl.ChangeMode, "restart"); !slices.Contains([]string{"noop", "restart", "signal", "script"}, m) {
			add("Template %d: invalid change mode %q", i+1, m)
		}
		if p := deref(tmpl.Perms, "0644"); !isOctal(p) {
			add("Template %d: perms %q is not an octal mode", i+1, p)
		}
		if l, r := deref(tmpl.LeftDelim, "{{"), deref(tmpl.RightDelim, "}}"); l == "" || r == "" {
			add("Template %d: empty delimiter", i+1)
		}
	}
	// Interpolated references in the driver config and the environment.
	var strs []string
	collect(t.Config, &strs)
	for _, v := range t.Env {
		strs = append(strs, v)
	}
	for k := range t.Env {
		if !envSafe.MatchString(k) {
			add("Environment variable %q has an invalid name", k)
		}
	}
	for _, s := range strs {
		for _, m := range interpVar.FindAllStringSubmatch(s, -1) {
			if e := checkRef(m[1], ports); e != "" {
				add("%s", e)
			}
		}
	}
	return errs
}

// checkRef checks one ${...} reference.
func checkRef(ref string, ports map[string]bool) string {
	switch {
	case strings.HasPrefix(ref, "attr.") || strings.HasPrefix(ref, "meta.") || strings.HasPrefix(ref, "node.") || strings.HasPrefix(ref, "env."):
		return ""
	case slices.Contains(nomadVars, ref) || strings.HasPrefix(ref, "NOMAD_META_"):
		return ""
	}
	for _, p := range portVarPrefixes {
		if label, ok := strings.CutPrefix(ref, p); ok {
			if !ports[label] {
				return fmt.Sprintf("${%s} refers to port %q, which the group network does not define", ref, label)
			}
			return ""
		}
	}
	if strings.HasPrefix(ref, "NOMAD_") {
		return fmt.Sprintf("${%s} is not a variable Nomad defines", ref)
	}
	return "" // the task's own environment
}

func collect(v any, out *[]string) {
	switch t := v.(type) {
	case string:
		*out = append(*out, t)
	case []any:
		for _, e := range t {
			collect(e, out)
		}
	case []string:
		*out = append(*out, t...)
	case map[string]any:
		for _, e := range t {
			collect(e, out)
		}
	}
}

func isStringList(v any) bool {
	switch t := v.(type) {
	case []string:
		return true
	case []any:
		for _, e := range t {
			if _, ok := e.(string); !ok {
				return false
			}
		}
		return true
	}
	return false
}

func stringList(v any) []string {
	var out []string
	collect(v, &out)
	return out
}

func isHex(s string) bool {
	_, err := hex.DecodeString(s)
	return err == nil
}

func isOctal(s string) bool {
	_, err := strconv.ParseUint(s, 8, 32)
	return err == nil
}
