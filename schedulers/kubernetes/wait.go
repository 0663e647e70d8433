package kubernetes

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/egret-stream/egret/core/spi"
)

// waitScheduled waits, at most egret.kubernetes.schedule.timeout, until
// pods 0..replicas-1 of the topology exist and are bound to a node (accept,
// when set, must also hold for each). A zero timeout does not wait. When
// some are not placed in time, the error names each with the reason
// Kubernetes gives: the scheduler's FailedScheduling event (wrapping
// spi.ErrCannotFit), or the StatefulSet's FailedCreate event.
func (sc *Scheduler) waitScheduled(ctx context.Context, topology string, replicas int, accept func(*corev1.Pod) bool) error {
	if sc.s.scheduleTimeout == 0 {
		return nil
	}
	deadline := time.Now().Add(sc.s.scheduleTimeout)
	for {
		pods, err := sc.pods(ctx, topology)
		if err != nil {
			return err
		}
		byIndex := map[int]*corev1.Pod{}
		for i := range pods {
			p := &pods[i]
			if c, ok := podIndex(p, topology); ok && p.DeletionTimestamp == nil && (accept == nil || accept(p)) {
				byIndex[c] = p
			}
			if _, ok := p.Labels[appsv1.PodIndexLabel]; !ok && p.DeletionTimestamp == nil {
				return fmt.Errorf("kubernetes scheduler: pod %s has no label %s, which the StatefulSet controller sets from Kubernetes 1.28 on (feature gate PodIndexLabel): its executor cannot learn its container index; this scheduler needs Kubernetes 1.28 or later",
					p.Name, appsv1.PodIndexLabel)
			}
		}
		var missing, unplaced []int
		for c := range replicas {
			switch p := byIndex[c]; {
			case p == nil:
				missing = append(missing, c)
			case !scheduled(p):
				unplaced = append(unplaced, c)
			}
		}
		if len(missing) == 0 && len(unplaced) == 0 {
			return nil
		}
		if !time.Now().Before(deadline) {
			return sc.notPlaced(ctx, topology, byIndex, missing, unplaced)
		}
		if err := sc.sleep(ctx); err != nil {
			return err
		}
	}
}

// notPlaced explains why pods are missing or not bound to a node.
func (sc *Scheduler) notPlaced(ctx context.Context, topology string, pods map[int]*corev1.Pod, missing, unplaced []int) error {
	// Pods that fail for the same reason (they share one template) are
	// named together.
	var reasons []string
	byReason := map[string][]string{}
	note := func(pod, msg string) {
		if _, ok := byReason[msg]; !ok {
			reasons = append(reasons, msg)
		}
		byReason[msg] = append(byReason[msg], pod)
	}
	cannotFit := false
	for _, c := range unplaced {
		p := pods[c]
		msg := sc.eventMessage(ctx, "Pod", p.Name, "FailedScheduling")
		if msg == "" {
			msg, _ = unschedulable(p)
		}
		if msg == "" {
			msg = "not bound to a node yet"
		} else {
			cannotFit = true
			msg = "unschedulable: " + msg
		}
		note(p.Name, msg)
	}
	if len(missing) > 0 {
		msg := sc.eventMessage(ctx, "StatefulSet", topology, "FailedCreate")
		if msg == "" {
			msg = "not created yet"
		} else {
			msg = "the StatefulSet cannot create it: " + msg
		}
		for _, c := range missing {
			note(PodName(topology, c), msg)
		}
	}
	parts := make([]string, 0, len(reasons))
	for _, r := range reasons {
		word := "pod"
		if len(byReason[r]) > 1 {
			word = "pods"
		}
		parts = append(parts, fmt.Sprintf("%s %s: %s", word, strings.Join(byReason[r], ", "), strings.TrimSuffix(r, ".")))
	}
	err := fmt.Errorf("kubernetes scheduler: topology %q is not placed after %s (%s): %s", topology, sc.s.scheduleTimeout, KeyScheduleTimeout, strings.Join(parts, "; "))
	if cannotFit {
		return fmt.Errorf("%w: %w", err, spi.ErrCannotFit)
	}
	return err
}

// eventMessage returns the message of the latest event of reason about an
// object, "" when there is none (or the events cannot be read).
func (sc *Scheduler) eventMessage(ctx context.Context, kind, name, reason string) string {
	l, err := sc.client.CoreV1().Events(sc.ns).List(ctx, metav1.ListOptions{
		FieldSelector: "involvedObject.kind=" + kind + ",involvedObject.name=" + name + ",reason=" + reason,
	})
	if err != nil {
		sc.log.Debug("cannot read events", zap.Error(err))
		return ""
	}
	var best *corev1.Event
	for i := range l.Items {
		e := &l.Items[i]
		if e.InvolvedObject.Kind != kind || e.InvolvedObject.Name != name || e.Reason != reason {
			continue // a fake API server may ignore field selectors
		}
		if best == nil || eventTime(e).After(eventTime(best)) {
			best = e
		}
	}
	if best == nil {
		return ""
	}
	return oneLine(best.Message)
}

func eventTime(e *corev1.Event) time.Time {
	switch {
	case !e.LastTimestamp.IsZero():
		return e.LastTimestamp.Time
	case !e.EventTime.IsZero():
		return e.EventTime.Time
	}
	return e.CreationTimestamp.Time
}

// podIndex returns the container index of a pod of the topology: its
// pod-index label, else the ordinal at the end of its name.
func podIndex(p *corev1.Pod, topology string) (int, bool) {
	s, ok := p.Labels[appsv1.PodIndexLabel]
	if !ok {
		if s, ok = strings.CutPrefix(p.Name, topology+"-"); !ok {
			return 0, false
		}
	}
	n, err := strconv.Atoi(s)
	return n, err == nil && n >= 0
}

// scheduled reports whether a pod is bound to a node.
func scheduled(p *corev1.Pod) bool {
	if p.Spec.NodeName != "" {
		return true
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

// unschedulable returns the PodScheduled condition's message of a pod the
// scheduler could not place.
func unschedulable(p *corev1.Pod) (string, bool) {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
			return oneLine(c.Message), true
		}
	}
	return "", false
}

// Diagnose names every container of the topology whose pod does not run,
// with Kubernetes' reason.
func (sc *Scheduler) Diagnose(ctx context.Context, topology string) (string, error) {
	if err := sc.check(ctx); err != nil {
		return "", err
	}
	sts, err := sc.statefulSet(ctx, topology)
	if err != nil {
		return "", err
	}
	pods, err := sc.pods(ctx, topology)
	if err != nil {
		return "", err
	}
	byIndex := map[int]*corev1.Pod{}
	for i := range pods {
		if c, ok := podIndex(&pods[i], topology); ok && pods[i].DeletionTimestamp == nil {
			byIndex[c] = &pods[i]
		}
	}
	var parts []string
	for c := range int(deref(sts.Spec.Replicas)) {
		p := byIndex[c]
		if p == nil {
			msg := sc.eventMessage(ctx, "StatefulSet", topology, "FailedCreate")
			if msg == "" {
				msg = "not created yet"
			}
			parts = append(parts, fmt.Sprintf("container %d: pod %s: %s", c, PodName(topology, c), msg))
			continue
		}
		if why := podTrouble(p); why != "" {
			if !scheduled(p) {
				if m := sc.eventMessage(ctx, "Pod", p.Name, "FailedScheduling"); m != "" {
					why = "unschedulable: " + m
				}
			}
			parts = append(parts, fmt.Sprintf("container %d: pod %s: %s", c, p.Name, why))
		}
	}
	if len(parts) == 0 {
		return "", nil
	}
	return strings.Join(parts, "; ") + fmt.Sprintf(" (kubectl -n %s describe pod ... shows more)", sc.ns), nil
}

// podTrouble says what keeps a pod from running, "" when it runs.
func podTrouble(p *corev1.Pod) string {
	if msg, ok := unschedulable(p); ok {
		return "unschedulable: " + msg
	}
	statuses := slices.Concat(p.Status.InitContainerStatuses, p.Status.ContainerStatuses)
	for _, cs := range statuses {
		switch {
		case cs.State.Waiting != nil && cs.State.Waiting.Reason != "" && cs.State.Waiting.Reason != "PodInitializing" && cs.State.Waiting.Reason != "ContainerCreating":
			w := cs.State.Waiting
			msg := fmt.Sprintf("container %s is waiting: %s", cs.Name, w.Reason)
			if w.Message != "" {
				msg += ": " + oneLine(w.Message)
			}
			if t := cs.LastTerminationState.Terminated; t != nil {
				msg += fmt.Sprintf(" (last exit code %d, %s)", t.ExitCode, t.Reason)
			}
			return msg
		case cs.State.Terminated != nil && cs.State.Terminated.ExitCode != 0:
			t := cs.State.Terminated
			return fmt.Sprintf("container %s exited with code %d (%s)", cs.Name, t.ExitCode, t.Reason)
		}
	}
	if p.Status.Phase != corev1.PodRunning {
		return "phase " + string(p.Status.Phase)
	}
	return ""
}
