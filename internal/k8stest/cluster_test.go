package k8stest

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func waitPod(t *testing.T, c *Cluster, name string, phase corev1.PodPhase) *corev1.Pod {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		p, err := c.Client.CoreV1().Pods("default").Get(context.Background(), name, metav1.GetOptions{})
		if err == nil && p.Status.Phase == phase {
			return p
		}
		if time.Now().After(deadline) {
			t.Fatalf("pod %s not %s: %v %+v", name, phase, err, p.Status)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// stopped checks that Stop left none of the cluster's processes.
func stopped(t *testing.T, c *Cluster) {
	t.Helper()
	if err := c.Stop(); err != nil {
		t.Fatal(err)
	}
	for _, p := range c.procs {
		if err := syscall.Kill(p.cmd.Process.Pid, 0); err == nil {
			t.Errorf("%s (pid %d) still runs", p.name, p.cmd.Process.Pid)
		}
	}
	if _, err := os.Stat(c.Dir); !os.IsNotExist(err) {
		t.Errorf("%s left: %v", c.Dir, err)
	}
}

// TestKwok: the fast tier places a pod on kwok's node and runs it
// (Running, no process), and Stop leaves nothing.
func TestKwok(t *testing.T) {
	c := Require(t, Options{Nodes: Kwok})
	v, err := c.Client.Discovery().ServerVersion()
	if err != nil || v.GitVersion != Version {
		t.Fatalf("version %v, %v", v, err)
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "none"}}}}
	if _, err := c.Client.CoreV1().Pods("default").Create(context.Background(), pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if p := waitPod(t, c, "p", corev1.PodRunning); p.Spec.NodeName != c.NodeName {
		t.Errorf("on node %q", p.Spec.NodeName)
	}
	if err := c.Restart(context.Background(), "kube-apiserver"); err != nil {
		t.Fatal(err)
	}
	stopped(t, c)
}

// TestKubelet: the real node runs a busybox pod (restricted security
// context, emptyDir) to completion, the pod resolves its own name under a
// headless Service through the cluster DNS, its log is readable, and Stop
// leaves no process, bridge or mount.
func TestKubelet(t *testing.T) {
	c := Require(t, Options{Nodes: Kubelet})
	nonRoot := int64(65532)
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "hs"}, Spec: corev1.ServiceSpec{
		ClusterIP: corev1.ClusterIPNone, Selector: map[string]string{"app": "hello"}, PublishNotReadyAddresses: true,
		Ports: []corev1.ServicePort{{Name: "p", Port: 80}},
	}}
	if _, err := c.Client.CoreV1().Services("default").Create(context.Background(), svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "hello", Labels: map[string]string{"app": "hello"}}, Spec: corev1.PodSpec{
		RestartPolicy: corev1.RestartPolicyNever, Hostname: "hello", Subdomain: "hs",
		SecurityContext: &corev1.PodSecurityContext{RunAsUser: &nonRoot, RunAsNonRoot: ptr(true), SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}},
		Containers: []corev1.Container{{Name: "c", Image: "busybox:1.36", ImagePullPolicy: corev1.PullNever,
			// The endpoint appears once the pod has its address: retry.
			Command: []string{"sh", "-c", "echo hello from $(id -u) > /w/f && cat /w/f; " +
				"for i in $(seq 100); do nslookup -type=a hello.hs.default.svc.cluster.local >/w/ns 2>&1 && break; sleep 0.1; done; " +
				"echo resolved $(grep -A1 '^Name:' /w/ns | sed -n 's/^Address: //p') own $(hostname -i)"},
			VolumeMounts: []corev1.VolumeMount{{Name: "w", MountPath: "/w"}}}},
		Volumes: []corev1.Volume{{Name: "w", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
	}}
	if _, err := c.Client.CoreV1().Pods("default").Create(context.Background(), pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	p := waitPod(t, c, "hello", corev1.PodSucceeded)
	if logs := c.PodLogs("default", "hello", "c"); !strings.Contains(logs, "hello from 65532") || !strings.Contains(logs, "resolved "+p.Status.PodIP+" own "+p.Status.PodIP) {
		t.Errorf("logs: %q (pod IP %s)", logs, p.Status.PodIP)
	}
	stopped(t, c)
	if err := exec.Command("ip", "link", "show", bridgeName).Run(); err == nil {
		t.Errorf("bridge %s left", bridgeName)
	}
	mounts, _ := os.ReadFile("/proc/self/mountinfo")
	if strings.Contains(string(mounts), c.Dir) {
		t.Errorf("mounts under %s left", c.Dir)
	}
}
