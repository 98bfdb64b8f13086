package resume

import (
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// Retry is about how soon a reconcile that could not reach its API server
// is tried again (between half of it and all of it).
const Retry = 2 * time.Second

// Unreachable says whether err is an API server that could not be reached,
// or whose connection broke before it answered (refused, reset, an EOF, a
// timeout), rather than one that answered.
func Unreachable(err error) bool {
	if err == nil {
		return false
	}
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		return false
	}
	var nerr net.Error
	return utilnet.IsConnectionRefused(err) || utilnet.IsProbableEOF(err) || (errors.As(err, &nerr) && nerr.Timeout()) ||
		// client-go's own, when the body broke off
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		strings.Contains(err.Error(), "may be caused by closed connection") ||
		strings.Contains(err.Error(), "http2: client connection lost")
}

// Reconciler returns r, except that a reconcile that failed because its
// API server could not be reached is tried again after about Retry, rather
// than after the controller's backoff, which doubles at each failure: a
// partition of two minutes grows it to minutes, long past the heal. Other
// errors are returned as they are (and backed off).
func Reconciler(r reconcile.Reconciler) reconcile.Reconciler {
	return reconcile.Func(func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
		res, err := r.Reconcile(ctx, req)
		if !Unreachable(err) {
			return res, err
		}
		wait := Retry/2 + rand.N(Retry/2)
		ctrl.LoggerFrom(ctx).V(1).Info("API server unreachable; trying again", "in", wait, "err", err.Error())
		return reconcile.Result{RequeueAfter: wait}, nil
	})
}
