// Package k8stest starts and stops a real Kubernetes on loopback for
// tests: etcd, kube-apiserver, kube-controller-manager and kube-scheduler
// v1.34 built by scripts/k8s-deps.sh (cached outside the repository), and
// either fake nodes (kwok: the fast tier, pods are Running without a
// process) or one real node (containerd 1.6, runc, the CNI bridge and the
// kubelet: the real-pod tier, root only, one at a time per machine).
//
// Every daemon listens on 127.0.0.1 only (the kubelet tier's pods are on
// the bridge 10.244.0.0/24, whose gateway 10.244.0.1 is the host), runs
// with GOMAXPROCS=1, and is stopped, with everything it left (mounts,
// cgroups, the bridge, iptables chains, sysctls), by Stop.
//
// Require is the tests' entry point: with the binaries missing it fails
// when EGRET_REQUIRE_K8S=1 (make test) and skips otherwise, saying how to
// build them.
package k8stest
