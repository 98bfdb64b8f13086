// Package requeue says when a reconcile that lost an optimistic-concurrency
// race, or found its cache behind its own last write, looks again: the
// hub's and the agent's controllers share it.
package requeue

import (
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrl "sigs.k8s.io/controller-runtime"
)

// CacheLag is how long such a reconcile waits: a watch cache catches up with
// a write in milliseconds, and the next look decides from fresher data.
const CacheLag = 100 * time.Millisecond

// OnConflict turns a conflict (someone wrote first) into a quiet retry after
// CacheLag; any other error is returned as it is.
func OnConflict(err error) (ctrl.Result, error) {
	if apierrors.IsConflict(err) {
		return ctrl.Result{RequeueAfter: CacheLag}, nil
	}
	return ctrl.Result{}, err
}
