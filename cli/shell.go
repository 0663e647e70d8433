package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/egret-stream/egret/core/names"
	"github.com/egret-stream/egret/daemons/executor"
	"github.com/egret-stream/egret/daemons/shell"
	"github.com/egret-stream/egret/daemons/shellapi"
	"github.com/egret-stream/egret/internal/hostaddr"
	"github.com/egret-stream/egret/internal/loglevel"
	"github.com/egret-stream/egret/launcher"
)

func shellCmd(g *globals) *cobra.Command {
	var c shell.Config
	var metricsSocket string
	return daemonCommand(g, "shell --topology T --topology-id ID --container N --work-dir W --config F", "Run a container's shell (logs, processes, kill, log levels over HTTP)",
		func(cmd *cobra.Command) {
			f := cmd.Flags()
			f.StringVar(&c.TopologyName, "topology", "", "topology name")
			f.StringVar(&c.TopologyID, "topology-id", "", "topology id")
			f.IntVar(&c.Container, "container", 0, "container index")
			f.StringVar(&c.WorkDir, "work-dir", "", "the container's working directory")
			f.StringVar(&c.Host, "host", "", "address to advertise (default: $EGRET_HOST, the host name, or 127.0.0.1)")
			f.StringVar(&c.BindHost, "bind", hostaddr.Bind(), "interface to listen on (default: $EGRET_BIND_HOST, else all)")
			f.IntVar(&c.Port, "port", hostaddr.EnvPort("EGRET_PORT_SHELL"), "port to listen on (default: $EGRET_PORT_SHELL, else any)")
			f.StringVar(&metricsSocket, "metrics-socket", "", "the metrics manager's Unix socket, for the process metrics")
		},
		func(ctx context.Context, d *daemonEnv) error {
			if c.TopologyName == "" || c.WorkDir == "" || c.Container < 0 {
				return usagef("shell needs --topology, --work-dir and --container (0 or more)")
			}
			if c.Host == "" {
				c.Host = hostaddr.Advertised()
			}
			sm, err := d.stateManager(ctx)
			if err != nil {
				return err
			}
			defer sm.Close()
			c.StateManager = sm
			go d.publishProcessMetrics(ctx, metricsSocket, "shell", c.Container)
			return shell.Run(ctx, c, d.log)
		})
}

// logTarget is what `egret logs` shows.
type logTarget struct {
	component string
	task      int // -1: the component's first task
	container int // -1: not given
}

// parseLogTarget parses [component[:task] | container N].
func parseLogTarget(args []string) (logTarget, error) {
	t := logTarget{task: -1, container: -1}
	switch {
	case len(args) == 0:
		return t, nil
	case args[0] == "container":
		if len(args) != 2 {
			return t, usagef("logs: `container` needs one container index: egret logs local wordcount container 1")
		}
		n, err := names.ParseContainer(args[1])
		if err != nil {
			return t, usageError{err}
		}
		t.container = n
		return t, nil
	case len(args) > 1:
		return t, usagef("logs takes one target, component[:task] or container N; got %q", strings.Join(args, " "))
	}
	comp, task, hasTask := strings.Cut(args[0], ":")
	if err := names.Check(names.Component, comp); err != nil {
		return t, usageError{err}
	}
	t.component = comp
	if hasTask {
		n, err := strconv.Atoi(task)
		if err != nil || n < 0 || len(task) > 9 {
			return t, usagef("logs: task %q of %s is not a task id (a non-negative integer)", task, comp)
		}
		t.task = n
	}
	return t, nil
}

func logsCmd(g *globals) *cobra.Command {
	var follow bool
	var tail int
	var file string
	cmd := &cobra.Command{
		Use:   "logs cluster[/role[/env]] <topology> [component[:task] | container N] [-f] [--tail N] [--file NAME]",
		Short: "Print the log of an instance or a container's daemon, through the container's shell",
		Long: `Print the log of an instance (component, or component:task) or, with
container N, list the container's log files (--file NAME prints one). Without
a target, it lists the log files of every container. -f follows the log until
interrupted; --tail N starts with the last N lines.`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) < 2 || len(args) > 4 {
				return usagef("logs needs a cluster, a topology and optionally a target: egret logs local wordcount word:2")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			target, err := parseLogTarget(args[2:])
			if err != nil {
				return err
			}
			if tail < -1 {
				return usagef("--tail %d must not be negative", tail)
			}
			if file != "" {
				if target.container < 0 {
					return usagef("--file needs a container: egret logs local wordcount container 1 --file stmgr.log")
				}
				if err := shellLogName(file); err != nil {
					return usageError{err}
				}
			}
			if err := names.Check(names.Topology, args[1]); err != nil {
				return usageError{err}
			}
			l, err := g.launcher(args[0], g.logger())
			if err != nil {
				return err
			}
			ctx, name, out := cmd.Context(), args[1], cmd.OutOrStdout()
			switch {
			case target.component != "":
				c, task, err := l.InstanceContainer(ctx, name, target.component, target.task)
				if err != nil {
					return err
				}
				sh, err := l.Shell(ctx, name, c)
				if err != nil {
					return err
				}
				return printLog(ctx, sh, executor.InstanceName(target.component, task)+".log", tail, follow, out)
			case file != "":
				sh, err := l.Shell(ctx, name, target.container)
				if err != nil {
					return err
				}
				return printLog(ctx, sh, file, tail, follow, out)
			case follow:
				return usagef("-f follows one log: name an instance (component[:task]) or a container and --file")
			case target.container >= 0:
				sh, err := l.Shell(ctx, name, target.container)
				if err != nil {
					return err
				}
				return listLogs(ctx, []launcher.Shell{sh}, out)
			default:
				cs, err := l.Containers(ctx, name)
				if err != nil {
					return err
				}
				var shells []launcher.Shell
				for _, c := range cs {
					sh, err := l.Shell(ctx, name, c)
					if err != nil {
						return err
					}
					shells = append(shells, sh)
				}
				return listLogs(ctx, shells, out)
			}
		},
	}
	f := cmd.Flags()
	f.BoolVarP(&follow, "follow", "f", false, "follow the log until interrupted")
	f.IntVar(&tail, "tail", -1, "start with the last N lines (default: the whole log)")
	f.StringVar(&file, "file", "", "with container N: the log file to print (as listed)")
	return cmd
}

// shellLogName checks a log file name before it goes into a URL.
func shellLogName(s string) error {
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '-' || r == '_') {
			return fmt.Errorf("--file %q is not a log file name (letters, digits, '.', '-', '_')", s)
		}
	}
	if s == "" || s[0] == '.' {
		return fmt.Errorf("--file %q is not a log file name", s)
	}
	return nil
}

var shellClient = &http.Client{Timeout: 30 * time.Second}

// shellGet GETs path (already escaped) from a shell.
func shellGet(ctx context.Context, sh launcher.Shell, path string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, sh.URL+path, nil)
	if err != nil {
		return nil, err
	}
	resp, err := shellClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("shell of container %d: %w", sh.Container, err)
	}
	if resp.StatusCode != http.StatusOK {
		defer resp.Body.Close()
		return nil, shellError(sh, resp)
	}
	return resp, nil
}

func shellError(sh launcher.Shell, resp *http.Response) error {
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
	msg := strings.TrimSpace(strings.ReplaceAll(string(b), "\n", " "))
	return fmt.Errorf("shell of container %d: %s: %s", sh.Container, resp.Status, msg)
}

func listLogs(ctx context.Context, shells []launcher.Shell, out io.Writer) error {
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "CONTAINER\tFILE\tSIZE\tMODIFIED")
	for _, sh := range shells {
		resp, err := shellGet(ctx, sh, "/logs")
		if err != nil {
			return err
		}
		var files []shell.LogFile
		err = json.NewDecoder(resp.Body).Decode(&files)
		resp.Body.Close()
		if err != nil {
			return fmt.Errorf("shell of container %d: decode the log list: %w", sh.Container, err)
		}
		for _, f := range files {
			fmt.Fprintf(tw, "%d\t%s\t%d\t%s\n", sh.Container, f.Name, f.Size, f.ModTime.Local().Format(time.RFC3339))
		}
	}
	return tw.Flush()
}

// readChunk reads bytes of a log from offset (negative: from the end);
// it returns them, their offset and the file's size.
func readChunk(ctx context.Context, sh launcher.Shell, file string, offset, length int64) ([]byte, int64, int64, error) {
	q := url.Values{"offset": {strconv.FormatInt(offset, 10)}}
	if length >= 0 {
		q.Set("length", strconv.FormatInt(length, 10))
	}
	resp, err := shellGet(ctx, sh, "/logs/"+url.PathEscape(file)+"?"+q.Encode())
	if err != nil {
		return nil, 0, 0, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, 0, 0, fmt.Errorf("shell of container %d: read %s: %w", sh.Container, file, err)
	}
	at, _ := strconv.ParseInt(resp.Header.Get(shellapi.HeaderOffset), 10, 64)
	size, _ := strconv.ParseInt(resp.Header.Get(shellapi.HeaderFileSize), 10, 64)
	return b, at, size, nil
}

// printLog prints a log (its last tail lines when tail >= 0) and, with
// follow, what is appended to it until ctx ends. A log that shrank was
// rotated: following goes on from its start.
func printLog(ctx context.Context, sh launcher.Shell, file string, tail int, follow bool, out io.Writer) error {
	w := bufio.NewWriter(out)
	defer w.Flush()
	var pos int64
	if tail >= 0 {
		// Read back from the end until tail lines are in hand.
		for back := int64(64 << 10); ; back *= 4 {
			b, at, _, err := readChunk(ctx, sh, file, -back, -1)
			if err != nil {
				return err
			}
			if at == 0 || bytes.Count(b, []byte("\n")) > tail || back >= shell.MaxRead {
				w.Write(lastLines(b, tail, at == 0))
				pos = at + int64(len(b))
				break
			}
		}
	} else {
		for {
			b, _, size, err := readChunk(ctx, sh, file, pos, -1)
			if err != nil {
				return err
			}
			w.Write(b)
			pos += int64(len(b))
			if len(b) == 0 || pos >= size {
				break
			}
		}
	}
	if !follow {
		return nil
	}
	for {
		if err := w.Flush(); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(500 * time.Millisecond):
		}
		b, _, size, err := readChunk(ctx, sh, file, pos, -1)
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			return err
		}
		if size < pos { // rotated
			pos = 0
			continue
		}
		w.Write(b)
		pos += int64(len(b))
	}
}

// lastLines returns the last n lines of b; when b does not start at the
// beginning of the file its first, partial line does not count.
func lastLines(b []byte, n int, whole bool) []byte {
	if n <= 0 {
		return nil
	}
	if !whole {
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			b = b[i+1:]
		} else {
			b = nil
		}
	}
	end := len(b)
	if end > 0 && b[end-1] == '\n' {
		end--
	}
	for i := end - 1; i >= 0; i-- {
		if b[i] == '\n' {
			if n--; n == 0 {
				return b[i+1:]
			}
		}
	}
	return b
}

func loglevelCmd(g *globals) *cobra.Command {
	var component string
	var duration time.Duration
	cmd := &cobra.Command{
		Use:   "loglevel cluster[/role[/env]] <topology> <level> [--component C] [--duration 10m]",
		Short: "Change the log level of a running topology's processes for a while, without a restart",
		Long: `Set the log level (debug, info, warn, error) of every process of a running
topology, or of one component's instances (--component; also tmanager, stmgr,
metricsmgr or shell for the daemons), for --duration. Each process goes back
to its configured level by itself when the duration ends, whether or not
this command or the shells still run. A new loglevel replaces the previous
one; --duration 1s reverts at once.`,
		Args: exactArgs(3, "egret loglevel local wordcount debug --component word --duration 5m"),
		RunE: func(cmd *cobra.Command, args []string) error {
			name, level := args[1], args[2]
			if err := names.Check(names.Topology, name); err != nil {
				return usageError{err}
			}
			if _, err := loglevel.ParseLevel(level); err != nil {
				return usageError{err}
			}
			if component != "" {
				if err := names.Check(names.Component, component); err != nil {
					return usageError{fmt.Errorf("--component: %w", err)}
				}
			}
			if duration <= 0 || duration > loglevel.MaxDuration {
				return usagef("--duration %s must be positive and at most %s", duration, loglevel.MaxDuration)
			}
			l, err := g.launcher(args[0], g.logger())
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			if component != "" && !isDaemonKind(component) {
				if _, _, err := l.InstanceContainer(ctx, name, component, -1); err != nil {
					return err
				}
			}
			cs, err := l.Containers(ctx, name)
			if err != nil {
				return err
			}
			req := shellapi.LogLevelRequest{Level: level, Component: component, Duration: duration.String()}
			var failed []string
			var until time.Time
			for _, c := range cs {
				sh, err := l.Shell(ctx, name, c)
				if err == nil {
					until, err = shellapi.PostLogLevel(ctx, shellClient, sh.Container, sh.URL, sh.Secret, req)
				}
				if err != nil {
					failed = append(failed, err.Error())
				}
			}
			who := "every process"
			if component != "" {
				who = component
			}
			if len(failed) > 0 {
				return fmt.Errorf("log level %s for %s set in %d of %d containers; %s", level, who, len(cs)-len(failed), len(cs), strings.Join(failed, "; "))
			}
			fmt.Fprintf(cmd.OutOrStdout(), "log level %s for %s of %s in %d containers until %s\n", level, who, name, len(cs), until.Local().Format(time.RFC3339))
			return nil
		},
	}
	cmd.Flags().StringVar(&component, "component", "", "only this component's instances (or daemon: tmanager, stmgr, metricsmgr, shell)")
	cmd.Flags().DurationVar(&duration, "duration", 10*time.Minute, "how long the level holds before each process reverts")
	return cmd
}

func isDaemonKind(s string) bool {
	switch executor.Kind(s) {
	case executor.KindTManager, executor.KindStmgr, executor.KindMetricsMgr, executor.KindShell:
		return true
	}
	return false
}
