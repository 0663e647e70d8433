package kubernetes

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/egret-stream/egret/core/spi"
	"github.com/egret-stream/egret/schedulers/schedulertest"
)

// TestRealCluster runs the conformance suite against a real cluster when
// EGRET_TEST_KUBECONFIG names a kubeconfig (and EGRET_TEST_NAMESPACE a
// namespace the user may use, default "default"); it is skipped
// otherwise, and has never run where it was written (no cluster). The
// pods run busybox with a patch that makes the executor sleep, so the
// suite checks the scheduler's objects and pod lifecycle, not egret's
// daemons.
func TestRealCluster(t *testing.T) {
	kc := os.Getenv("EGRET_TEST_KUBECONFIG")
	if kc == "" {
		t.Skip("EGRET_TEST_KUBECONFIG is not set: no real cluster to test against")
	}
	ns := os.Getenv("EGRET_TEST_NAMESPACE")
	if ns == "" {
		ns = "default"
	}
	rc, err := clientcmd.BuildConfigFromFlags("", kc)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		t.Fatal(err)
	}
	cfg := realClusterConfig(kc, ns)
	schedulertest.Run(t, schedulertest.Harness{
		New: func(t *testing.T, _ string) spi.Scheduler {
			s, err := New(cfg, nil)
			if err != nil {
				t.Fatal(err)
			}
			return s
		},
		Containers: func(ctx context.Context, topology string) (map[int]string, error) {
			l, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: LabelTopology + "=" + topology})
			if err != nil {
				return nil, err
			}
			out := map[int]string{}
			for _, p := range l.Items {
				if p.Status.Phase != corev1.PodRunning || p.DeletionTimestamp != nil {
					continue
				}
				i, err := strconv.Atoi(p.Labels["apps.kubernetes.io/pod-index"])
				if err == nil {
					out[i] = string(p.UID)
				}
			}
			return out, nil
		},
		Timeout:      3 * 60e9,
		PollInterval: 1e9,
		StrictErrors: true,
		EditJob: func(job *spi.Job) {
			job.PackageURI = "http://unused.invalid/p.tar.gz" // the patch skips the download
			for i := range job.Plan.Containers {
				job.Plan.Containers[i].Required.CPU = 0.1
				job.Plan.Containers[i].Required.RAM = 64 << 20
				job.Plan.Containers[i].Required.Disk = 64 << 20
			}
		},
		LoseContainer: func(ctx context.Context, topology string, container int) error {
			return cs.CoreV1().Pods(ns).Delete(ctx, PodName(topology, container), metav1.DeleteOptions{})
		},
		Unplaceable: func(job *spi.Job) {
			for i := range job.Plan.Containers {
				job.Plan.Containers[i].Required.RAM = 1 << 50
			}
		},
	})
}

// realClusterConfig is TestRealCluster's: busybox pods whose executor
// sleeps and whose init container does nothing.
func realClusterConfig(kc, ns string) spi.Config {
	return spi.Config{
		KeyKubeconfig: kc, KeyNamespace: ns, KeyImage: "busybox:1.36", KeyScheduleTimeout: "60s", KeyDeleteTimeout: "2m",
		KeyTManagerCPU: "0.1", KeyTManagerRAM: "64MiB", KeyTManagerDisk: "64MiB",
		KeyPodTemplatePatch: `{"spec":{"initContainers":[{"name":"fetch","command":["true"]}],"containers":[{"name":"executor","command":["sh","-c","trap 'exit 0' TERM; sleep 3600 & wait"],"args":[]}]}}`,
	}
}

// TestRealClusterPatch checks that TestRealCluster's patch makes the pods
// what it says.
func TestRealClusterPatch(t *testing.T) {
	sc := newTestScheduler(t, nil, realClusterConfig("", testNS))
	out, err := sc.RenderJob(testJob())
	if err != nil {
		t.Fatal(err)
	}
	_, _, sts := decodeManifests(t, out)
	spec := sts.Spec.Template.Spec
	if c := spec.Containers[0]; c.Name != ContainerName || len(c.Command) != 3 || !strings.Contains(c.Command[2], "trap 'exit 0' TERM") || len(c.Args) != 0 || c.Image != "busybox:1.36" {
		t.Errorf("executor: %v %v %s", c.Command, c.Args, c.Image)
	}
	if c := spec.InitContainers[0]; len(c.Command) != 1 || c.Command[0] != "true" {
		t.Errorf("init: %v", c.Command)
	}
}
