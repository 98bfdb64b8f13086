package forwarder

import (
	"context"
	"fmt"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	addonv1beta1 "open-cluster-management.io/api/addon/v1beta1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	workv1 "open-cluster-management.io/api/work/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
	"github.com/hostfleet/hostfleet/internal/resume"
	"github.com/hostfleet/hostfleet/internal/setup"
)

// SetupWithManager wires the controller. The manager's cache should hold
// only the forwarder's ManifestWorks (CacheOptions).
func (r *Reconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager, o setup.Options) error {
	if r.Recorder == nil {
		r.Recorder = mgr.GetEventRecorder("hostfleet-forwarder")
	}
	if r.Reader == nil {
		r.Reader = mgr.GetAPIReader()
	}
	idx := mgr.GetFieldIndexer()
	if err := idx.IndexField(ctx, &metal3api.HostClaim{}, secretIndex, func(o client.Object) []string {
		c := o.(*metal3api.HostClaim)
		if !remote(c) {
			return nil
		}
		var out []string
		for _, ref := range SecretRefs(c) {
			out = append(out, c.Namespace+"/"+ref.Name)
		}
		return out
	}); err != nil {
		return fmt.Errorf("index remote claims by secret: %w", err)
	}
	if err := idx.IndexField(ctx, &metal3api.HostClaim{}, clusterIndex, func(o client.Object) []string {
		if cl := o.GetLabels()[hostfleetv1alpha1.LabelCluster]; cl != "" && remote(o) {
			return []string{cl}
		}
		return nil
	}); err != nil {
		return fmt.Errorf("index remote claims by cluster: %w", err)
	}
	if err := idx.IndexField(ctx, &workv1.ManifestWork{}, workIndex, workClaimKey); err != nil {
		return fmt.Errorf("index ManifestWorks by claim: %w", err)
	}
	claimsBy := func(index string, key func(client.Object) string) handler.EventHandler {
		return handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []reconcile.Request {
			return setup.ListRequests(ctx, r.Client, &metal3api.HostClaimList{}, "the remote claims of "+index+" "+key(o),
				client.MatchingFields{index: key(o)}, client.UnsafeDisableDeepCopy)
		})
	}
	ofWork := handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
		l := o.GetLabels()
		if l[hostfleetv1alpha1.LabelClaimName] == "" {
			return nil
		}
		return []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: l[hostfleetv1alpha1.LabelClaimNamespace], Name: l[hostfleetv1alpha1.LabelClaimName]}}}
	})
	sameName := handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
		return []reconcile.Request{{NamespacedName: client.ObjectKeyFromObject(o)}}
	})
	isCopy := predicate.NewPredicateFuncs(func(o client.Object) bool {
		_, ok := o.GetLabels()[hostfleetv1alpha1.LabelClaimUID]
		return ok
	})
	return ctrl.NewControllerManagedBy(mgr).
		Named("forwarder").
		For(&metal3api.HostClaim{}, builder.WithPredicates(predicate.NewPredicateFuncs(remote))).
		Watches(&workv1.ManifestWork{}, ofWork).
		Watches(&corev1.Secret{}, claimsBy(secretIndex, func(o client.Object) string { return o.GetNamespace() + "/" + o.GetName() }),
			builder.OnlyMetadata).
		Watches(&clusterv1.ManagedCluster{}, claimsBy(clusterIndex, client.Object.GetName)).
		Watches(&addonv1beta1.ManagedClusterAddOn{}, claimsBy(clusterIndex, client.Object.GetNamespace),
			builder.WithPredicates(predicate.NewPredicateFuncs(func(o client.Object) bool { return o.GetName() == hostfleetv1alpha1.AddonName }))).
		Watches(&metal3api.HardwareData{}, sameName, builder.WithPredicates(isCopy)).
		Complete(resume.Reconciler(r))
}

// CacheByObject restricts a manager's cache of ManifestWorks to the
// forwarder's (those labelled with a claim UID): the add-on manager's works
// are not its business.
func CacheByObject() map[client.Object]cache.ByObject {
	has, _ := labels.NewRequirement(hostfleetv1alpha1.LabelClaimUID, selection.Exists, nil)
	return map[client.Object]cache.ByObject{&workv1.ManifestWork{}: {Label: labels.NewSelector().Add(*has)}}
}
