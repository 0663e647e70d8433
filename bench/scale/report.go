package scale

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/egret-stream/egret/bench/harness"
)

// Markers of the generated part of docs/benchmarks.md §Scale.
const (
	beginMarker = "<!-- BEGIN SCALE (make bench-scale, bench/scale/cmd/egret-scale): do not edit between these markers -->"
	endMarker   = "<!-- END SCALE -->"
)

// Markdown renders the results as the generated part of §Scale.
func Markdown(results []*Result, mesh []*MeshResult, commit string) string {
	m := harness.DescribeMachine()
	var b strings.Builder
	fmt.Fprintf(&b, "Machine: %d × %s, %s, kernel %s, %s; %s. Egret commit %s. One real topology manager (its own process, localfs state manager), N stand-in stream managers (exact wire protocol, no data plane) and N metrics publishers (a container's %d reports every 10 s: executor, stream manager, metrics manager, shell, and per task the instance's and the executor's) in the harness process; 2 tasks per container; Egret's default heartbeat (1 s) and eviction timeout (5 s). The load average is the machine's when each run started: other work shared the 2 cores. \"dead container dropped\": a stand-in stops heartbeating and reading with its connection open, until the topology manager closes it; \"replacement\": its replacement's registration (new data port) until every container holds a plan with it; checkpoints of empty state under effectively-once, 1 s interval, 5 measured.\n\n",
		m.NProc, m.CPUModel, m.MemTotal, m.Kernel, m.GoVersion, m.Date.UTC().Format(time.RFC3339), commit, reportsPerContainer(2))
	b.WriteString("| N | load avg | plan frame | registrations spread | last registration → plan at all | tmanager cores (steady) | tmanager RSS (peak) | tmanager sockets | dead container dropped | replacement → in every plan | checkpoint (median, max) | GET /healthz | GET /pplan | GET /stats | dropped and re-registered |\n")
	b.WriteString("|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	byN := map[int][]*Result{}
	var ns []int
	for _, r := range results {
		if _, ok := byN[r.Containers]; !ok {
			ns = append(ns, r.Containers)
		}
		byN[r.Containers] = append(byN[r.Containers], r)
	}
	slices.Sort(ns)
	for _, n := range ns {
		var base, eo *Result
		for _, r := range byN[n] {
			if r.EffectivelyOnce {
				eo = r
			} else {
				base = r
			}
		}
		if base == nil {
			base = eo
		}
		ck := "–"
		if eo != nil && len(eo.Checkpoints) > 0 {
			cs := slices.Clone(eo.Checkpoints)
			slices.Sort(cs)
			ck = fmt.Sprintf("%s, %s", ms(cs[len(cs)/2]), ms(cs[len(cs)-1]))
		}
		opt := func(d time.Duration) string {
			if d == 0 {
				return "–"
			}
			return ms(d)
		}
		cores, rss, socks := "–", "–", "–"
		if base.Steady > 0 {
			cores = fmt.Sprintf("%.3f", base.TMCores)
			rss = fmt.Sprintf("%d MiB (%d MiB)", base.TMRSS>>20, base.TMPeakRSS>>20)
			socks = fmt.Sprint(base.TMSockets)
		}
		fmt.Fprintf(&b, "| %d | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %d |\n",
			n, base.LoadAvg, kib(base.PlanBytes), ms(base.Registering), ms(base.PlanAll), cores, rss, socks,
			opt(base.Detect), opt(base.Replan), ck,
			ms(base.HTTP["/healthz"]), fmt.Sprintf("%s (%s)", ms(base.HTTP["/pplan"]), kib(base.HTTPBytes["/pplan"])),
			fmt.Sprintf("%s (%s)", ms(base.HTTP["/stats"]), kib(base.HTTPBytes["/stats"])), base.Reconnects)
	}
	b.WriteString("\n")
	if len(mesh) > 0 {
		b.WriteString("The data-plane mesh, real stream managers (daemons/stmgr, no instances) of N containers in one process with the real topology manager, and one more container whose stand-in counts the back-pressure announcements sent to it (so each stream manager has N peers; each peer connection has both its sockets in that process, so N stays below the file-descriptor limit here):\n\n")
		b.WriteString("| N | load avg | start → plan and every peer connected | peer connections per stream manager | sockets per stream manager | heap per stream manager | goroutines per stream manager | CPU of the N idle stream managers |\n")
		b.WriteString("|---:|---|---:|---:|---:|---:|---:|---:|\n")
		slices.SortFunc(mesh, func(a, b *MeshResult) int { return a.Containers - b.Containers })
		for _, m := range mesh {
			fmt.Fprintf(&b, "| %d | %s | %s | %d | %.1f | %d KiB | %.0f | %.3f cores |\n", m.Containers, m.LoadAvg, ms(m.MeshUp), m.PeersPerStmgr, m.SocketsPerStmgr, m.HeapPerStmgr>>10, m.GoroutinesPerStmgr, m.IdleCores)
		}
		b.WriteString("\n")
	}
	return b.String()
}

func ms(d time.Duration) string {
	switch {
	case d >= 10*time.Second:
		return fmt.Sprintf("%.1f s", d.Seconds())
	case d >= time.Second:
		return fmt.Sprintf("%.2f s", d.Seconds())
	default:
		return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond))
	}
}

func kib(n int) string {
	if n < 10<<10 {
		return fmt.Sprintf("%.1f KiB", float64(n)/1024)
	}
	return fmt.Sprintf("%d KiB", n>>10)
}

// section is the generated part of docs/benchmarks.md's §Scale.
var section = harness.Appended(beginMarker, endMarker, "## Scale\n\nSee bench/scale and docs/operations.md §Scale.")

// UpdateSection replaces the generated part of path's §Scale (between the
// markers), or appends a §Scale with it.
func UpdateSection(path, generated string) error { return section.Update(path, generated) }
