package hardwarecopy

import (
	"context"
	"fmt"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
	"github.com/hostfleet/hostfleet/internal/resume"
	"github.com/hostfleet/hostfleet/internal/setup"
)

// ReasonCopyRemoved is the reason of the Event on a claim whose copy was
// removed.
const ReasonCopyRemoved = "HardwareDataCopyRemoved"

// Reconciler removes the copies that are not their claim's.
type Reconciler struct {
	Client client.Client
	// Reader confirms, uncached, a claim the cache says a copy is stale
	// for; SetupWithManager uses the manager's API reader if nil.
	Reader client.Reader
	// Recorder records an Event on the claim whose copy is removed;
	// SetupWithManager makes one if nil.
	Recorder events.EventRecorder
}

// SetupWithManager watches the copies, and the claims (a claim moved to
// another cluster, or recreated, checks its copy again).
func (r *Reconciler) SetupWithManager(_ context.Context, mgr ctrl.Manager, o setup.Options) error {
	if r.Recorder == nil {
		r.Recorder = mgr.GetEventRecorder("hostfleet-hardwarecopy")
	}
	if r.Reader == nil {
		r.Reader = mgr.GetAPIReader()
	}
	isCopy := predicate.NewPredicateFuncs(func(o client.Object) bool {
		_, ok := o.GetLabels()[hostfleetv1alpha1.LabelClaimUID]
		return ok
	})
	return ctrl.NewControllerManagedBy(mgr).
		Named("hardwarecopy").
		For(&metal3api.HardwareData{}, builder.WithPredicates(isCopy)).
		Watches(&metal3api.HostClaim{}, handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
			return []reconcile.Request{{NamespacedName: client.ObjectKeyFromObject(o)}}
		})).
		Complete(resume.Reconciler(r))
}

// Reconcile checks one copy against its claim.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	cp := &metal3api.HardwareData{}
	if err := r.Client.Get(ctx, req.NamespacedName, cp); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	uid, isCopy := cp.Labels[hostfleetv1alpha1.LabelClaimUID]
	if !isCopy || !cp.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil
	}
	claim := &metal3api.HostClaim{}
	why := ""
	// The cache first; a stale verdict is confirmed from the API server.
	for _, reader := range []client.Reader{r.Client, r.Reader} {
		claim = &metal3api.HostClaim{}
		err := reader.Get(ctx, req.NamespacedName, claim)
		if err != nil && !apierrors.IsNotFound(err) {
			return ctrl.Result{}, fmt.Errorf("get the claim of HardwareData copy %s: %w", req, err)
		}
		if why = Stale(cp, claim, err == nil, uid); why == "" {
			return ctrl.Result{}, nil
		}
	}
	if err := r.Client.Delete(ctx, cp, client.Preconditions{UID: &cp.UID}); client.IgnoreNotFound(err) != nil {
		return ctrl.Result{}, fmt.Errorf("remove HardwareData copy %s: %w", req, err)
	}
	ctrl.LoggerFrom(ctx).Info("removed a HardwareData copy that is not its claim's", "why", why)
	if claim.UID != "" {
		r.Recorder.Eventf(claim, nil, corev1.EventTypeWarning, ReasonCopyRemoved, "RemoveCopy",
			"removed HardwareData copy %s: %s; the agent of the claim's cluster makes it again", req.Name, why)
	}
	return ctrl.Result{}, nil
}

// Stale says why a copy is not its claim's ("" when it is): the claim is
// gone, is another claim of the same name, or is placed on another cluster
// than the one whose agent made the copy.
func Stale(cp *metal3api.HardwareData, claim *metal3api.HostClaim, claimExists bool, claimUID string) string {
	madeBy := cp.Labels[hostfleetv1alpha1.LabelCluster]
	placedOn := claim.Labels[hostfleetv1alpha1.LabelCluster]
	switch {
	case !claimExists:
		return "its claim is gone"
	case string(claim.UID) != claimUID:
		return "it was made for an earlier claim of the same name"
	case madeBy != placedOn:
		return fmt.Sprintf("it was made by the agent of cluster %q, and the claim is placed on %q", madeBy, placedOn)
	}
	return ""
}
