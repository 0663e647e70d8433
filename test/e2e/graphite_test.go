package e2e

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"
)

// carbonBinaries returns Debian's carbon-cache and whisper-fetch, skipping
// the test when they are absent (failing it when EGRET_REQUIRE_CARBON=1,
// as make test sets).
func carbonBinaries(t *testing.T) (cache, fetch string) {
	t.Helper()
	cache, err1 := exec.LookPath("carbon-cache")
	fetch, err2 := exec.LookPath("whisper-fetch")
	if err1 != nil || err2 != nil {
		if os.Getenv("EGRET_REQUIRE_CARBON") == "1" {
			t.Fatal("carbon-cache or whisper-fetch is not installed and EGRET_REQUIRE_CARBON=1: apt-get install --no-install-recommends graphite-carbon (make test-deps does)")
		}
		t.Skip("carbon-cache is not installed (apt-get install --no-install-recommends graphite-carbon)")
	}
	return cache, fetch
}

// startCarbon runs a real carbon-cache keeping every metric at 1 s
// resolution for an hour; it returns the line receiver's address and the
// whisper directory.
func startCarbon(t *testing.T, bin string) (addr, whisper string) {
	t.Helper()
	dir := t.TempDir()
	for _, d := range []string{"conf", "log", "run", "storage/whisper", "storage/lists"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	line := freePort(t)
	conf := fmt.Sprintf(`[cache]
STORAGE_DIR = %[1]s/storage/
LOCAL_DATA_DIR = %[1]s/storage/whisper/
WHITELISTS_DIR = %[1]s/storage/lists/
CONF_DIR = %[1]s/conf/
LOG_DIR = %[1]s/log/
PID_DIR = %[1]s/run/
USER =
MAX_CACHE_SIZE = inf
MAX_UPDATES_PER_SECOND = inf
MAX_CREATES_PER_MINUTE = inf
LINE_RECEIVER_INTERFACE = 127.0.0.1
LINE_RECEIVER_PORT = %[2]d
ENABLE_UDP_LISTENER = False
PICKLE_RECEIVER_INTERFACE = 127.0.0.1
PICKLE_RECEIVER_PORT = %[3]d
CACHE_QUERY_INTERFACE = 127.0.0.1
CACHE_QUERY_PORT = %[4]d
CARBON_METRIC_INTERVAL = 0
WHISPER_AUTOFLUSH = True
LOG_LISTENER_CONNECTIONS = False
ENABLE_TAGS = False
`, dir, line, freePort(t), freePort(t))
	schemas := "[default]\npattern = .*\nretentions = 1s:1h\n"
	if err := os.WriteFile(filepath.Join(dir, "conf", "carbon.conf"), []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "conf", "storage-schemas.conf"), []byte(schemas), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "--config="+filepath.Join(dir, "conf", "carbon.conf"), "--nodaemon",
		"--logdir="+filepath.Join(dir, "log"), "--pidfile="+filepath.Join(dir, "run", "carbon.pid"), "start")
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	logf, err := os.Create(filepath.Join(dir, "carbon.out"))
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		if t.Failed() {
			b, _ := os.ReadFile(filepath.Join(dir, "carbon.out"))
			t.Logf("carbon-cache output:\n%s", b)
		}
	})
	addr = fmt.Sprintf("127.0.0.1:%d", line)
	waitFor(t, "carbon-cache to listen", time.Minute, func() bool {
		select {
		case <-done:
			b, _ := os.ReadFile(filepath.Join(dir, "carbon.out"))
			t.Fatalf("carbon-cache exited:\n%s", b)
		default:
		}
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
		}
		return err == nil
	})
	return addr, filepath.Join(dir, "storage", "whisper")
}

// whisperValues returns the non-null points of the last minute of a
// whisper file, oldest first.
func whisperValues(fetch, file string) []float64 {
	out, err := exec.Command(fetch, "--json", fmt.Sprintf("--from=%d", time.Now().Add(-time.Minute).Unix()), file).Output()
	if err != nil {
		return nil
	}
	var r struct{ Values []*float64 }
	if json.Unmarshal(out, &r) != nil {
		return nil
	}
	var vs []float64
	for _, v := range r.Values {
		if v != nil {
			vs = append(vs, *v)
		}
	}
	return vs
}

// TestGraphiteSinkFeedsCarbon: the graphite sink of a running topology
// writes to a real carbon-cache, which stores a series per task and per
// daemon with rising values.
func TestGraphiteSinkFeedsCarbon(t *testing.T) {
	cache, fetch := carbonBinaries(t)
	addr, whisper := startCarbon(t, cache)
	c := newCluster(t, "local", "egret.metrics.sinks=file,tmanager,graphite", "egret.metrics.graphite.address="+addr,
		"egret.metrics.graphite.prefix=e2e")
	c.mustEgret("submit", c.name, binary(t, "wordcount"), "--", "--containers", "2")

	// <prefix>.<topology>.<component>.<task>.<metric>, one file per path.
	var files []string
	waitFor(t, "carbon to store instance.executed of the count tasks", 4*time.Minute, func() bool {
		files, _ = filepath.Glob(filepath.Join(whisper, "e2e", "wordcount", "count", "*", "instance", "executed.wsp"))
		return len(files) > 0
	})
	waitFor(t, "a count task's executed series to rise in carbon", 4*time.Minute, func() bool {
		for _, f := range files {
			vs := whisperValues(fetch, f)
			if len(vs) >= 2 && vs[len(vs)-1] > vs[0] {
				return true
			}
		}
		return false
	})
	// Daemons: <prefix>.<topology>.<daemon>.<container>.<metric>.
	waitFor(t, "carbon to store the stream managers' and metrics managers' series", 4*time.Minute, func() bool {
		st, _ := filepath.Glob(filepath.Join(whisper, "e2e", "wordcount", "stmgr", "*", "process", "rss", "bytes.wsp"))
		mm, _ := filepath.Glob(filepath.Join(whisper, "e2e", "wordcount", "metricsmgr", "*", "metricsmgr", "received.wsp"))
		return len(st) == 2 && len(mm) == 3
	})
	// A task's series appear once its first report has reached carbon: on
	// a busy machine some tasks report after the others (the spout's were
	// missing once when the count's and the daemons' were there).
	await(t, "carbon to store series of every component and daemon", 4*time.Minute, func() (bool, string) {
		names, _ := filepath.Glob(filepath.Join(whisper, "e2e", "wordcount", "*"))
		for i := range names {
			names[i] = filepath.Base(names[i])
		}
		for _, want := range []string{"sentence", "split", "count", "stmgr", "metricsmgr"} {
			if !slices.Contains(names, want) {
				return false, fmt.Sprintf("no series of %s under e2e.wordcount (got %v)", want, names)
			}
		}
		return true, fmt.Sprintf("%v", names)
	})
	c.mustEgret("kill", c.name, "wordcount")
	c.waitGone(t)
}
