package placedclaim

import (
	"context"
	"fmt"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
	"github.com/hostfleet/hostfleet/internal/resume"
	"github.com/hostfleet/hostfleet/internal/setup"
)

// claimIndex indexes PlacedClaims (metadata) by AnnotationPlacedClaim.
const claimIndex = "hostfleet.placed-claim"

// Reconciler keeps each claim's PlacedClaim.
type Reconciler struct {
	Client client.Client
}

// metadata is the PlacedClaim kind as the hub caches it: metadata only.
func metadata() *metav1.PartialObjectMetadata {
	m := &metav1.PartialObjectMetadata{}
	m.SetGroupVersionKind(hostfleetv1alpha1.GroupVersion.WithKind("PlacedClaim"))
	return m
}

// SetupWithManager watches the claims, and the copies' metadata (a copy
// deleted or changed by hand is written again).
func (r *Reconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager, o setup.Options) error {
	if err := mgr.GetFieldIndexer().IndexField(ctx, metadata(), claimIndex, func(o client.Object) []string {
		if k := o.GetAnnotations()[hostfleetv1alpha1.AnnotationPlacedClaim]; k != "" {
			return []string{k}
		}
		return nil
	}); err != nil {
		return err
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("placedclaim").
		For(&metal3api.HostClaim{}).
		Watches(metadata(), handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
			ns, name, ok := splitKey(o.GetAnnotations()[hostfleetv1alpha1.AnnotationPlacedClaim])
			if !ok {
				return nil
			}
			return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: ns, Name: name}}}
		}), builder.OnlyMetadata).
		WithOptions(o.Controller(4)).
		Complete(resume.Reconciler(r))
}

// Reconcile brings one claim's copies to Decide's plan.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	claim := &metal3api.HostClaim{}
	if err := r.Client.Get(ctx, req.NamespacedName, claim); err != nil {
		if !apierrors.IsNotFound(err) {
			return ctrl.Result{}, err
		}
		claim = nil
	}
	existing, err := r.existing(ctx, req.NamespacedName)
	if err != nil {
		return ctrl.Result{}, err
	}
	plan := Decide(claim, existing)
	// Deletes first: a claim recreated under the same name has a new
	// copy, which the agent must see after the old one's deletion.
	for _, e := range plan.Delete {
		pc := &hostfleetv1alpha1.PlacedClaim{}
		pc.Namespace, pc.Name = e.Namespace, e.Name
		if err := r.Client.Delete(ctx, pc, client.Preconditions{UID: &e.UID}); client.IgnoreNotFound(err) != nil {
			return ctrl.Result{}, fmt.Errorf("delete PlacedClaim %s/%s: %w", e.Namespace, e.Name, err)
		}
	}
	if plan.Write == nil {
		return ctrl.Result{}, nil
	}
	pc, err := Copy(claim, plan.Write.Namespace)
	if err != nil {
		return ctrl.Result{}, err
	}
	if plan.Update {
		pc.ResourceVersion = plan.Write.ResourceVersion
		err = r.Client.Update(ctx, pc)
	} else {
		err = r.Client.Create(ctx, pc)
	}
	switch {
	case apierrors.IsConflict(err), apierrors.IsAlreadyExists(err):
		// The cache is behind the copy: the copy's event, which the cache
		// has yet to see, enqueues the claim again.
		return ctrl.Result{}, nil
	case apierrors.IsNotFound(err) && !plan.Update:
		return ctrl.Result{}, fmt.Errorf("copy claim %s to cluster namespace %q, which does not exist: %w", req, pc.Namespace, err)
	case err != nil:
		return ctrl.Result{}, fmt.Errorf("write PlacedClaim %s/%s of claim %s: %w", pc.Namespace, pc.Name, req, err)
	}
	return ctrl.Result{}, nil
}

// existing lists the cached copies of a claim.
func (r *Reconciler) existing(ctx context.Context, key types.NamespacedName) ([]Existing, error) {
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(hostfleetv1alpha1.GroupVersion.WithKind("PlacedClaimList"))
	if err := r.Client.List(ctx, list, client.MatchingFields{claimIndex: Key(key.Namespace, key.Name)}); err != nil {
		return nil, fmt.Errorf("list the PlacedClaims of claim %s: %w", key, err)
	}
	out := make([]Existing, 0, len(list.Items))
	for _, m := range list.Items {
		out = append(out, Existing{Namespace: m.Namespace, Name: m.Name, UID: m.UID, ResourceVersion: m.ResourceVersion,
			ClaimVersion: m.Annotations[hostfleetv1alpha1.AnnotationPlacedClaimResourceVersion]})
	}
	return out, nil
}
