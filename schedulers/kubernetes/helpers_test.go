package kubernetes

import (
	"testing"
	"time"

	"go.uber.org/zap/zaptest"
	"k8s.io/client-go/kubernetes"

	"github.com/egret-stream/egret/core/spi"
)

const testNS = "egret-test"

// testConfig is a valid scheduler config for the tests.
func testConfig(extra ...string) spi.Config {
	c := spi.Config{
		KeyNamespace:       testNS,
		KeyScheduleTimeout: "5s",
		KeyDeleteTimeout:   "5s",
		keyCoreBundle:      "true",
	}
	for i := 0; i+1 < len(extra); i += 2 {
		c[extra[i]] = extra[i+1]
	}
	return c
}

// newTestScheduler builds a scheduler on client (nil: rendering only).
func newTestScheduler(t *testing.T, client kubernetes.Interface, cfg spi.Config) *Scheduler {
	t.Helper()
	s, err := parseSettings(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ns := s.namespace
	if ns == "" {
		ns = "default"
	}
	sc := newScheduler(s, client, ns, zaptest.NewLogger(t))
	sc.poll = 5 * time.Millisecond
	return sc
}

const testPackageURI = "http://packages.example/wordcount-0123456789ab.tar.gz"
const testSHA = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
