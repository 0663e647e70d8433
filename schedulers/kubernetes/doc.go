// Package kubernetes is Egret's scheduler for Kubernetes, registered as
// "kubernetes" and also served as the plugin binary
// egret-scheduler-kubernetes. docs/schedulers/kubernetes.md is the
// operator's guide.
package kubernetes
