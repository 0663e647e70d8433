// Package kubetest is a stand-in for a Kubernetes cluster in the tests of
// the kubernetes scheduler: client-go's fake clientset, a goroutine that
// plays the StatefulSet controller, garbage collector, scheduler and
// kubelet on it (Cluster), and an HTTP front of it that answers the
// requests the scheduler makes as the API server does (Server), so that
// the real REST client and the plugin binary can be tested too. It runs
// no process; it validates and defaults only what a real API server was
// seen to do on the scheduler's requests (real.go lists it: dry runs,
// immutable StatefulSet fields, the selector, a few defaults, the
// version). internal/k8stest runs the real one.
package kubetest
