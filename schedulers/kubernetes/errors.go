package kubernetes

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/egret-stream/egret/core/spi"
)

// fail turns an error of the API server (or of reaching it) into one line
// naming the operation, with the spi sentinel that fits.
func (sc *Scheduler) fail(ctx context.Context, op string, err error) error {
	if cerr := ctx.Err(); cerr != nil {
		return fmt.Errorf("kubernetes scheduler: %s: %w", op, cerr)
	}
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		st := status.Status()
		msg := oneLine(st.Message)
		switch {
		case apierrors.IsForbidden(err):
			return fmt.Errorf("kubernetes scheduler: %s in namespace %q: forbidden: %s (grant the user or service account of the kubeconfig that right, or choose another namespace with %s)",
				op, sc.ns, msg, KeyNamespace)
		case apierrors.IsUnauthorized(err):
			return fmt.Errorf("kubernetes scheduler: %s: the API server %s refused the credentials: %s (check %s and %s)", op, sc.host, msg, KeyKubeconfig, KeyContext)
		case apierrors.IsNotFound(err):
			return fmt.Errorf("kubernetes scheduler: %s: %s: %w", op, msg, spi.ErrNotFound)
		case apierrors.IsAlreadyExists(err):
			return fmt.Errorf("kubernetes scheduler: %s: %s: %w", op, msg, spi.ErrExists)
		case apierrors.IsConflict(err):
			return fmt.Errorf("kubernetes scheduler: %s: %s: %w", op, msg, spi.ErrVersionConflict)
		case apierrors.IsInvalid(err):
			return fmt.Errorf("kubernetes scheduler: %s: the API server rejected it: %s", op, msg)
		default:
			return fmt.Errorf("kubernetes scheduler: %s: %s (HTTP %d %s)", op, msg, st.Code, st.Reason)
		}
	}
	var uerr *url.Error
	var nerr net.Error
	if errors.As(err, &uerr) || errors.As(err, &nerr) {
		return fmt.Errorf("kubernetes scheduler: %s: cannot reach the API server %s: %s (check %s and %s)", op, sc.host, oneLine(rootCause(err).Error()), KeyKubeconfig, KeyContext)
	}
	return fmt.Errorf("kubernetes scheduler: %s: %s", op, oneLine(err.Error()))
}

// rootCause unwraps err to its innermost error, whose text is the least
// repetitive (url.Error repeats the method and URL).
func rootCause(err error) error {
	var uerr *url.Error
	if errors.As(err, &uerr) && uerr.Err != nil {
		return uerr.Err
	}
	return err
}
