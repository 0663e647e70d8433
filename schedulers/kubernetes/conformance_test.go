package kubernetes

import (
	"context"
	"testing"

	"go.uber.org/zap"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/egret-stream/egret/core/spi"
	"github.com/egret-stream/egret/plugins/plugintest"
	"github.com/egret-stream/egret/schedulers/kubernetes/kubetest"
	"github.com/egret-stream/egret/schedulers/schedulertest"
)

func harness(f *kubetest.Cluster, newSched func(t *testing.T) spi.Scheduler) schedulertest.Harness {
	return schedulertest.Harness{
		New:          func(t *testing.T, _ string) spi.Scheduler { return newSched(t) },
		Containers:   f.Containers,
		StrictErrors: true,
		PollInterval: 5e6, // 5ms: the fake acts at once
		// The init container downloads the package over http(s).
		EditJob: func(job *spi.Job) { job.PackageURI = testPackageURI },
		// A machine failure: the pod is gone, the controller creates it again.
		LoseContainer: func(ctx context.Context, topology string, container int) error {
			return f.CoreV1().Pods(testNS).Delete(ctx, PodName(topology, container), metav1.DeleteOptions{})
		},
		// More memory than the one node has: Pending, Unschedulable.
		Unplaceable: func(job *spi.Job) {
			for i := range job.Plan.Containers {
				job.Plan.Containers[i].Required.RAM = 1 << 40
			}
		},
	}
}

// TestConformance runs the scheduler conformance suite against the fake
// clientset and its fake controller, with the scheduler in process.
func TestConformance(t *testing.T) {
	f := kubetest.NewCluster(t, testNS)
	cfg := testConfig(KeyScheduleTimeout, "2s") // ample for the fake controller, even under -race on a loaded machine
	schedulertest.Run(t, harness(f, func(t *testing.T) spi.Scheduler { return newTestScheduler(t, f.Clientset, cfg) }))
}

// TestConformanceGRPC runs the suite through the plugin protocol (the
// gRPC adapters, in memory), still against the fake clientset.
func TestConformanceGRPC(t *testing.T) {
	f := kubetest.NewCluster(t, testNS)
	cfg := testConfig(KeyScheduleTimeout, "2s") // ample for the fake controller, even under -race on a loaded machine
	factory := func(c spi.Config, log *zap.Logger) (spi.Scheduler, error) {
		s, err := parseSettings(c)
		if err != nil {
			return nil, err
		}
		sc := newScheduler(s, f.Clientset, testNS, log)
		sc.poll = 5e6
		return sc, nil
	}
	schedulertest.Run(t, harness(f, func(t *testing.T) spi.Scheduler { return plugintest.Scheduler(t, factory, cfg) }))
}

// TestConformanceREST runs the suite with the scheduler as New builds it,
// talking over HTTP with client-go's REST client to the fake cluster's
// HTTP facade (kubetest.Serve): serialization, status codes and the
// kubeconfig path are the real ones; the server is not.
func TestConformanceREST(t *testing.T) {
	f := kubetest.NewCluster(t, testNS)
	kc := kubetest.WriteKubeconfig(t, f.Serve(t).URL)
	cfg := testConfig(KeyKubeconfig, kc, KeyScheduleTimeout, "2s")
	schedulertest.Run(t, harness(f, func(t *testing.T) spi.Scheduler { return newRealScheduler(t, cfg) }))
}
