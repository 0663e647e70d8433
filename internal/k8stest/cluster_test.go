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
// context, emptyDir) to completion, its log is readable, and Stop leaves
// no process, bridge or mount.
func TestKubelet(t *testing.T) {
	c := Require(t, Options{Nodes: Kubelet})
	nonRoot := int64(65532)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "hello"}, Spec: corev1.PodSpec{
		RestartPolicy:   corev1.RestartPolicyNever,
		SecurityContext: &corev1.PodSecurityContext{RunAsUser: &nonRoot, RunAsNonRoot: ptr(true), SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}},
		Containers: []corev1.Container{{Name: "c", Image: "busybox:1.36", ImagePullPolicy: corev1.PullNever,
			Command:      []string{"sh", "-c", "echo hello from $(id -u) > /w/f && cat /w/f"},
			VolumeMounts: []corev1.VolumeMount{{Name: "w", MountPath: "/w"}}}},
		Volumes: []corev1.Volume{{Name: "w", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
	}}
	if _, err := c.Client.CoreV1().Pods("default").Create(context.Background(), pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitPod(t, c, "hello", corev1.PodSucceeded)
	if logs := c.PodLogs("default", "hello", "c"); !strings.Contains(logs, "hello from 65532") {
		t.Errorf("logs: %q", logs)
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
