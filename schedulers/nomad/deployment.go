package nomad

import (
	"context"
	"fmt"
	"time"

	"github.com/hashicorp/nomad/api"
	"go.uber.org/zap"
)

// waitDeployment waits (at most egret.nomad.deployment.timeout) until
// Nomad's deployment of an updated job has ended: the replaced and new
// containers run and are healthy. Until then Nomad may still stop and
// start containers, so an update is not done before.
func (sc *Scheduler) waitDeployment(ctx context.Context, j *api.Job, id string) error {
	deadline := time.NewTimer(sc.s.deploymentTimeout)
	defer deadline.Stop()
	pause := sc.evalPoll
	for {
		d, _, err := sc.client.Deployments().Info(id, sc.qopts(ctx))
		if err != nil {
			return sc.fail(ctx, "read deployment "+id, err)
		}
		switch d.Status {
		case api.DeploymentStatusSuccessful:
			sc.log.Info("deployment succeeded", zap.String("job", deref(j.ID)), zap.String("deployment", id))
			return nil
		case api.DeploymentStatusFailed, api.DeploymentStatusCancelled:
			msg := fmt.Sprintf("nomad scheduler: Nomad's deployment %s of job %s %s: %s", shortID(id), deref(j.ID), d.Status, d.StatusDescription)
			if why, derr := sc.Diagnose(context.WithoutCancel(ctx), deref(j.Name)); derr == nil && why != "" {
				msg += "; " + why
			}
			return fmt.Errorf("%s (nomad deployment status %s)", msg, shortID(id))
		}
		t := time.NewTimer(pause)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("nomad scheduler: waiting for deployment %s: %w", shortID(id), ctx.Err())
		case <-deadline.C:
			t.Stop()
			return fmt.Errorf("nomad scheduler: Nomad's deployment %s of job %s is still %s after %s (egret.nomad.deployment.timeout); Nomad goes on with it: nomad deployment status %s",
				shortID(id), deref(j.ID), d.Status, sc.s.deploymentTimeout, shortID(id))
		case <-t.C:
		}
		pause = min(2*pause, time.Second)
	}
}
