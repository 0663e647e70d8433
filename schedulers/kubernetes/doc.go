// Package kubernetes is Egret's scheduler for Kubernetes, registered as
// "kubernetes" and also served as the plugin binary
// egret-scheduler-kubernetes.
//
// It works in library mode: every call (submit, kill, restart, update)
// talks to the API server through k8s.io/client-go and keeps no state;
// later calls find the topology's objects again by name and by the labels
// egret.io/topology and app.kubernetes.io/managed-by=egret. Kubernetes
// restarts dead containers and replaces lost pods.
//
// A topology is a ConfigMap (<topology>-config: the cluster config), a
// headless Service and a StatefulSet, all named after the topology. Pod i
// of the StatefulSet runs container i (pod 0 the topology manager): an
// init container downloads and checks the topology package (and egret,
// with egret.package.core.uri), and the executor container runs
// `egret executor --container $(EGRET_CONTAINER_INDEX)`, the index coming
// from the pod's apps.kubernetes.io/pod-index label through the downward
// API. Every pod gets the largest container's resources (one template per
// StatefulSet), as requests and limits. The StatefulSet uses the OnDelete
// update strategy: an update scales at the end and replaces only the pods
// of resized containers; restart deletes pods.
//
// Schedule waits for every pod to be bound to a node and otherwise fails
// with the Kubernetes scheduler's message, deleting what it created.
// RenderJob prints the manifests (--dry-run-format kubernetes-yaml).
// docs/schedulers/kubernetes.md is the operator's guide and says what was
// verified only against client-go's fake clientset.
package kubernetes
