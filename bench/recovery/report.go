package recovery

import (
	"fmt"
	"io"
	"strings"
)

// WriteMarkdown writes the result as a markdown table, one row per fault.
func (r *Result) WriteMarkdown(w io.Writer) error {
	var b strings.Builder
	mode := ""
	if r.Quick {
		mode = " (quick)"
	}
	fmt.Fprintf(&b, "### T5 recovery after kill -9%s\n\n", mode)
	if strings.HasPrefix(r.MessageTimeout, "effectively-once") {
		return r.writeEOMarkdown(w, &b)
	}
	if r.MaxRate > 0 {
		fmt.Fprintf(&b, "ackcheck (1 message → %d sink tuples), 2 containers, at-least-once, %d messages/s (%.0f%% of the measured maximum %.0f/s), message timeout %s; ",
			r.Copies, r.Rate, 100*float64(r.Rate)/r.MaxRate, r.MaxRate, r.MessageTimeout)
	} else {
		fmt.Fprintf(&b, "ackcheck (1 message → %d sink tuples), 2 containers, at-least-once, %d messages/s, message timeout %s; ", r.Copies, r.Rate, r.MessageTimeout)
	}
	fmt.Fprintf(&b, "recovered = the sink rate over %s windows back to at least %.0f%% of the rate before the kill and held there for %s. Machine: %s, %d CPUs, load %s.\n\n",
		r.RateWindow, 100*(1-r.Tolerance), r.Hold, orDash(r.Machine.CPUModel), r.Machine.NProc, orDash(r.Machine.LoadAvg))
	b.WriteString("| fault | killed | sink tuples/s before | lowest after | back within 10% after | all pre-kill messages acked after | replayed roots |\n")
	b.WriteString("|---|---|---:|---:|---:|---:|---:|\n")
	for _, f := range r.Faults {
		if f.Error != "" {
			fmt.Fprintf(&b, "| %s | %s | – | – | not measured: %s | – | – |\n", f.Kind, killed(f), oneLine(f.Error))
			continue
		}
		rec, comp := "not within the limit", "not within the limit"
		if f.Recovered {
			rec = fmt.Sprintf("%.2f s", f.RecoverySeconds)
		}
		if f.Complete {
			comp = fmt.Sprintf("%.2f s", f.CompleteSeconds)
		}
		fmt.Fprintf(&b, "| %s | %s | %.0f | %.0f | %s | %s | %d |\n", f.Kind, killed(f), f.BaselineRate, f.MinRate, rec, comp, f.ReplayedRoots)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// writeEOMarkdown writes an effectively-once run: the throughput is the
// words counted in state, a rollback makes it drop.
func (r *Result) writeEOMarkdown(w io.Writer, b *strings.Builder) error {
	fmt.Fprintf(b, "eocount (stateful word count, 3 words per sentence), 2 containers, %s, %d sentences/s", r.MessageTimeout, r.Rate)
	if r.MaxRate > 0 {
		fmt.Fprintf(b, " (%.0f%% of the measured maximum %.0f/s)", 100*float64(r.Rate)/r.MaxRate, r.MaxRate)
	}
	fmt.Fprintf(b, "; throughput = growth of the words counted in the count bolts' state; recovered = that growth over %s windows back to at least %.0f%% of the rate before the kill and held there for %s; caught up = the counts back at their level at the kill (a rollback undoes what followed the last checkpoint). Machine: %s, %d CPUs, load %s.\n\n",
		r.RateWindow, 100*(1-r.Tolerance), r.Hold, orDash(r.Machine.CPUModel), r.Machine.NProc, orDash(r.Machine.LoadAvg))
	b.WriteString("| fault | killed | words counted/s before | lowest after | back within 10% after | caught up after | words rolled back |\n")
	b.WriteString("|---|---|---:|---:|---:|---:|---:|\n")
	for _, f := range r.Faults {
		if f.Error != "" {
			fmt.Fprintf(b, "| %s | %s | – | – | not measured: %s | – | – |\n", f.Kind, killed(f), oneLine(f.Error))
			continue
		}
		rec, comp := "not within the limit", "not within the limit"
		if f.Recovered {
			rec = fmt.Sprintf("%.2f s", f.RecoverySeconds)
		}
		if f.Complete {
			comp = fmt.Sprintf("%.2f s", f.CompleteSeconds)
		}
		fmt.Fprintf(b, "| %s | %s | %.0f | %.0f | %s | %s | %d |\n", f.Kind, killed(f), f.BaselineRate, f.MinRate, rec, comp, f.ReplayedRoots)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func killed(f Fault) string {
	if len(f.Killed) > 3 {
		return fmt.Sprintf("all %d processes of container %d", len(f.Killed), f.Container)
	}
	return fmt.Sprintf("%s (container %d)", strings.Join(f.Killed, ", "), f.Container)
}

func orDash(s string) string {
	if s == "" {
		return "–"
	}
	return s
}

func oneLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return strings.ReplaceAll(s, "|", "/")
}
