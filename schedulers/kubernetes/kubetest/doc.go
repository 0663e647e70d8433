// Package kubetest is a stand-in for a Kubernetes cluster in the tests of
// the kubernetes scheduler: client-go's fake clientset, a goroutine that
// plays the StatefulSet controller, garbage collector, scheduler and
// kubelet on it (Cluster), and an HTTP front of it that answers the
// requests the scheduler makes as the API server does (Server), so that
// the real REST client and the plugin binary can be tested too. It runs
// no process and validates nothing an API server would.
package kubetest
