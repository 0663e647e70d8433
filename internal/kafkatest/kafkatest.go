// Package kafkatest runs a real single-node Apache Kafka 4.4.0 broker +
// controller (KRaft mode) for tests, from Maven Central jars.
//
// The jars (org.apache.kafka:kafka_2.13:4.4.0 and the log4j slf4j binding,
// listed in broker/pom.xml) must be in ~/.m2: scripts/test-deps.sh
// (make test-deps) resolves them there. Start builds the class path
// offline with `mvn -o dependency:build-classpath`, formats a fresh log
// directory, starts `java kafka.Kafka` on two free loopback ports with a
// small heap, and waits until a metadata request succeeds. The broker is
// stopped (its process group killed) when the test ends.
//
// Without java, mvn or the jars, or under go test -short, the test is
// skipped with a message, unless EGRET_REQUIRE_KAFKA=1 (make test sets it)
// turns a missing dependency into a failure.
package kafkatest

import (
	"bufio"
	"context"
	"crypto/rand"
	"crypto/sha256"
	_ "embed"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

//go:embed broker/pom.xml
var pom []byte

// RequireEnv, when "1", turns a missing Java, Maven or Kafka jars into a
// test failure instead of a skip (make test sets it).
const RequireEnv = "EGRET_REQUIRE_KAFKA"

// Version is the Kafka version the harness runs.
const Version = "4.4.0"

// startWait bounds one start of the broker (JVM start, log recovery).
const startWait = 90 * time.Second

// Broker is a running single-node Kafka cluster.
type Broker struct {
	// Addr is the PLAINTEXT listener, 127.0.0.1:port: the bootstrap
	// address for clients.
	Addr string
	// Dir holds the configuration, the log directory and server.log.
	Dir string

	t          testing.TB
	java, cp   string
	controller int
	mu         sync.Mutex
	cmd        *exec.Cmd
	exited     chan struct{}
}

// Start runs a fresh broker for the test. It skips the test under -short
// or when Java, Maven or the jars are missing (fails with
// EGRET_REQUIRE_KAFKA=1).
func Start(t testing.TB) *Broker {
	t.Helper()
	if testing.Short() {
		t.Skip("kafkatest: skipped under -short (starts a real Kafka broker)")
	}
	java, cp, err := classpath()
	if err != nil {
		if os.Getenv(RequireEnv) == "1" {
			t.Fatalf("kafkatest: %v (%s=1 requires a real Kafka broker; run `make test-deps`)", err, RequireEnv)
		}
		t.Skipf("kafkatest: %v; run `make test-deps` to run this test against a real Kafka %s broker", err, Version)
	}
	var lastErr error
	for attempt := 0; attempt < 3; attempt++ {
		b := &Broker{t: t, java: java, cp: cp, Dir: filepath.Join(t.TempDir(), "kafka")}
		if lastErr = b.setup(); lastErr != nil {
			t.Fatalf("kafkatest: %v", lastErr)
		}
		if lastErr = b.start(); lastErr == nil {
			t.Cleanup(b.Stop)
			t.Logf("kafkatest: Kafka %s broker at %s (dir %s)", Version, b.Addr, b.Dir)
			return b
		}
		b.Stop()
		if !strings.Contains(lastErr.Error(), "Address already in use") {
			break
		}
	}
	t.Fatalf("kafkatest: %v", lastErr)
	return nil
}

// classpath resolves the broker's class path offline from ~/.m2, once per
// version of the pom (cached in the user cache directory).
func classpath() (java, cp string, err error) {
	java, err = exec.LookPath("java")
	if err != nil {
		return "", "", errors.New("java not found on PATH")
	}
	mvn, err := exec.LookPath("mvn")
	if err != nil {
		return "", "", errors.New("mvn not found on PATH (it resolves the Kafka jars from ~/.m2)")
	}
	base, err := os.UserCacheDir()
	if err != nil {
		base = os.TempDir()
	}
	h := sha256.Sum256(pom)
	dir := filepath.Join(base, "egret", "kafka-broker", hex.EncodeToString(h[:])[:16])
	cpFile := filepath.Join(dir, "classpath.txt")
	if b, err := os.ReadFile(cpFile); err == nil && jarsExist(string(b)) {
		return java, strings.TrimSpace(string(b)), nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", "", fmt.Errorf("classpath cache: %w", err)
	}
	tmp, err := os.MkdirTemp(dir, ".build-")
	if err != nil {
		return "", "", fmt.Errorf("classpath cache: %w", err)
	}
	defer os.RemoveAll(tmp)
	if err := os.WriteFile(filepath.Join(tmp, "pom.xml"), pom, 0o644); err != nil {
		return "", "", fmt.Errorf("classpath cache: %w", err)
	}
	out := filepath.Join(tmp, "classpath.txt")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, mvn, "-B", "-q", "-o", "-f", filepath.Join(tmp, "pom.xml"),
		"dependency:build-classpath", "-Dmdep.outputFile="+out, "-Dmdep.includeScope=runtime")
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", "", fmt.Errorf("the Kafka %s jars are not in ~/.m2 (mvn -o dependency:build-classpath: %v): %s", Version, err, lastLines(string(b), 5))
	}
	b, err := os.ReadFile(out)
	if err != nil {
		return "", "", fmt.Errorf("classpath: %w", err)
	}
	if err := os.Rename(out, cpFile); err != nil {
		return "", "", fmt.Errorf("classpath cache: %w", err)
	}
	return java, strings.TrimSpace(string(b)), nil
}

func jarsExist(cp string) bool {
	parts := strings.Split(strings.TrimSpace(cp), string(os.PathListSeparator))
	if len(parts) < 10 {
		return false
	}
	for _, p := range parts {
		if _, err := os.Stat(p); err != nil {
			return false
		}
	}
	return true
}

// setup picks the ports, writes the configuration and formats the log
// directory.
func (b *Broker) setup() error {
	ports, err := freePorts(2)
	if err != nil {
		return err
	}
	b.Addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[0]))
	b.controller = ports[1]
	if err := os.MkdirAll(filepath.Join(b.Dir, "data"), 0o755); err != nil {
		return fmt.Errorf("broker dir: %w", err)
	}
	ctrl := net.JoinHostPort("127.0.0.1", strconv.Itoa(b.controller))
	props := strings.Join([]string{
		"process.roles=broker,controller",
		"node.id=1",
		"controller.quorum.bootstrap.servers=" + ctrl,
		"listeners=PLAINTEXT://" + b.Addr + ",CONTROLLER://" + ctrl,
		"advertised.listeners=PLAINTEXT://" + b.Addr,
		"controller.listener.names=CONTROLLER",
		"inter.broker.listener.name=PLAINTEXT",
		"listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
		"log.dirs=" + filepath.Join(b.Dir, "data"),
		"num.partitions=1",
		"offsets.topic.replication.factor=1",
		"offsets.topic.num.partitions=1",
		"transaction.state.log.replication.factor=1",
		"transaction.state.log.min.isr=1",
		"transaction.state.log.num.partitions=1",
		"share.coordinator.state.topic.replication.factor=1",
		"share.coordinator.state.topic.min.isr=1",
		"group.initial.rebalance.delay.ms=0",
		"auto.create.topics.enable=false",
		"broker.heartbeat.interval.ms=500",
		"broker.session.timeout.ms=2000",
		// Short group timeouts so that rebalance tests are quick.
		"group.min.session.timeout.ms=1000",
		"group.consumer.min.session.timeout.ms=1000",
		"group.consumer.min.heartbeat.interval.ms=500",
		"",
	}, "\n")
	log4j := strings.Join([]string{
		"status = warn",
		"appender.file.type = File",
		"appender.file.name = FILE",
		"appender.file.fileName = ${sys:kafka.logs.dir}/server.log",
		"appender.file.layout.type = PatternLayout",
		"appender.file.layout.pattern = [%d] %p %m (%c)%n",
		"rootLogger.level = INFO",
		"rootLogger.appenderRef.file.ref = FILE",
		"",
	}, "\n")
	for name, content := range map[string]string{"server.properties": props, "log4j2.properties": log4j} {
		if err := os.WriteFile(filepath.Join(b.Dir, name), []byte(content), 0o644); err != nil {
			return fmt.Errorf("broker config: %w", err)
		}
	}
	id, err := clusterID()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), startWait)
	defer cancel()
	cmd := exec.CommandContext(ctx, b.java, "-Xmx128m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-XX:-UsePerfData",
		"-cp", b.cp, "kafka.tools.StorageTool", "format", "-t", id, "-c", filepath.Join(b.Dir, "server.properties"), "--standalone")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("format the log dir: %w: %s", err, lastLines(string(out), 10))
	}
	return nil
}

// clusterID returns a random Kafka Uuid in its base64 form (as
// kafka.tools.StorageTool random-uuid prints it).
func clusterID() (string, error) {
	for {
		var u [16]byte
		if _, err := rand.Read(u[:]); err != nil {
			return "", fmt.Errorf("cluster id: %w", err)
		}
		s := base64.RawURLEncoding.EncodeToString(u[:])
		if !strings.HasPrefix(s, "-") && u != [16]byte{} {
			return s, nil
		}
	}
}

func freePorts(n int) ([]int, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	var ports []int
	for i := 0; i < n; i++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("free port: %w", err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// start runs the broker JVM and waits until it answers a metadata request.
func (b *Broker) start() error {
	logf, err := os.OpenFile(filepath.Join(b.Dir, "stdout.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("broker log: %w", err)
	}
	defer logf.Close()
	cmd := exec.Command(b.java, "-Xms64m", "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-XX:-UsePerfData",
		"-Djava.awt.headless=true", "-Dlog4j2.configurationFile="+filepath.Join(b.Dir, "log4j2.properties"),
		"-Dkafka.logs.dir="+b.Dir, "-cp", b.cp, "kafka.Kafka", filepath.Join(b.Dir, "server.properties"))
	cmd.Dir = b.Dir
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start the broker JVM: %w", err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	b.mu.Lock()
	b.cmd, b.exited = cmd, exited
	b.mu.Unlock()

	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr), kgo.RequestRetries(0), kgo.RetryTimeout(time.Second))
	if err != nil {
		return fmt.Errorf("client: %w", err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	deadline := time.Now().Add(startWait)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		bs, err := adm.ListBrokers(ctx)
		cancel()
		if err == nil && len(bs) > 0 {
			return nil
		}
		select {
		case <-exited:
			return fmt.Errorf("the broker exited during startup (%v); %s", cmd.ProcessState, b.logTail())
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the broker did not answer within %s (last error %v); %s", startWait, err, b.logTail())
		}
	}
}

// logTail returns the end of the broker's output and server.log.
func (b *Broker) logTail() string {
	out, _ := os.ReadFile(filepath.Join(b.Dir, "stdout.log"))
	return "output:\n" + lastLines(string(out), 20) + "\nserver.log:\n" + lastLines(tailFile(filepath.Join(b.Dir, "server.log")), 40)
}

func tailFile(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		lines = append(lines, sc.Text())
		if len(lines) > 60 {
			lines = lines[1:]
		}
	}
	return strings.Join(lines, "\n")
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// Stop stops the broker: SIGTERM (a controlled shutdown), then SIGKILL of
// its process group after 20 s. It is safe to call more than once.
func (b *Broker) Stop() {
	b.mu.Lock()
	cmd, exited := b.cmd, b.exited
	b.cmd = nil
	b.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-exited:
	case <-time.After(20 * time.Second):
	}
	// The JVM starts no children, but kill the whole group to be sure
	// nothing outlives the test.
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	<-exited
}

// Kill SIGKILLs the broker's process group (a crash) and waits for it.
func (b *Broker) Kill() {
	b.mu.Lock()
	cmd, exited := b.cmd, b.exited
	b.cmd = nil
	b.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	<-exited
}

// Restart stops the broker and starts it again on the same ports and log
// directory.
func (b *Broker) Restart() error {
	b.Stop()
	return b.Resume()
}

// Resume starts a stopped (or killed) broker again on the same ports and
// log directory.
func (b *Broker) Resume() error {
	b.mu.Lock()
	running := b.cmd != nil
	b.mu.Unlock()
	if running {
		return errors.New("kafkatest: the broker is running")
	}
	if err := b.start(); err != nil {
		return fmt.Errorf("kafkatest: restart: %w", err)
	}
	return nil
}

// Client returns a client of the broker, closed when the test ends.
func (b *Broker) Client(t testing.TB, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(b.Addr)}, opts...)...)
	if err != nil {
		t.Fatalf("kafkatest: client: %v", err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// CreateTopic creates a topic with the given partitions (replication 1)
// and waits until every partition has a leader.
func (b *Broker) CreateTopic(t testing.TB, topic string, partitions int32, configs map[string]string) {
	t.Helper()
	adm := kadm.NewClient(b.Client(t))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cfg := map[string]*string{}
	for k, v := range configs {
		cfg[k] = &v
	}
	resp, err := adm.CreateTopic(ctx, partitions, 1, cfg, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		t.Fatalf("kafkatest: create topic %s: %v", topic, err)
	}
	for {
		md, err := adm.Metadata(ctx, topic)
		if err == nil {
			if td, ok := md.Topics[topic]; ok && td.Err == nil && len(td.Partitions) == int(partitions) {
				ready := true
				for _, p := range td.Partitions {
					ready = ready && p.Err == nil && p.Leader >= 0
				}
				if ready {
					return
				}
			}
		}
		select {
		case <-ctx.Done():
			t.Fatalf("kafkatest: topic %s has no leaders in time (last error %v)", topic, err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}
