package forwarder

import (
	"context"
	"fmt"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	workv1 "open-cluster-management.io/api/work/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
)

func workClaimKey(o client.Object) []string {
	l := o.GetLabels()
	if l[hostfleetv1alpha1.LabelClaimName] == "" {
		return nil
	}
	return []string{l[hostfleetv1alpha1.LabelClaimNamespace] + "/" + l[hostfleetv1alpha1.LabelClaimName]}
}

// dropStale deletes the works made for an earlier claim of this name: one
// gone without its work withdrawn (uid "": none of this name exists now),
// or one replaced by a claim of the same name (uid). A claim can go
// without the forwarder's finalizer when its DELETE crossed the finalizer
// (kube-apiserver lets such a DELETE through,
// kubernetes/kubernetes#77988), or when the finalizer was forced off.
// Deleting the work deletes its target claim, whose controller releases
// the host. A claim missing from the cache is read from the API server
// first.
func (r *Reconciler) dropStale(ctx context.Context, key types.NamespacedName, uid types.UID) error {
	var works workv1.ManifestWorkList
	// Read, not changed: no copies (a work carries the claim and secrets).
	if err := r.Client.List(ctx, &works, client.MatchingFields{workIndex: key.String()}, client.UnsafeDisableDeepCopy); err != nil {
		return fmt.Errorf("list the ManifestWorks of claim %s: %w", key, err)
	}
	for i := range works.Items {
		w := &works.Items[i]
		if !w.DeletionTimestamp.IsZero() || w.Labels[hostfleetv1alpha1.LabelClaimUID] == string(uid) {
			continue
		}
		if uid == "" {
			c := &metal3api.HostClaim{}
			err := r.Reader.Get(ctx, key, c)
			if client.IgnoreNotFound(err) != nil {
				return fmt.Errorf("read claim %s: %w", key, err)
			}
			if err == nil && w.Labels[hostfleetv1alpha1.LabelClaimUID] == string(c.UID) {
				continue // there: the cache has not caught up
			}
		}
		if err := r.Client.Delete(ctx, w, client.Preconditions{UID: &w.UID}); client.IgnoreNotFound(err) != nil && !apierrors.IsConflict(err) {
			return fmt.Errorf("delete ManifestWork %s of a claim that is gone: %w", klog.KObj(w), err)
		}
		ctrl.LoggerFrom(ctx).Info("deleted the ManifestWork of a claim that is gone", "work", klog.KObj(w), "claimUID", w.Labels[hostfleetv1alpha1.LabelClaimUID])
	}
	return nil
}
