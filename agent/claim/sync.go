package claim

import (
	"context"
	"errors"
	"fmt"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hostfleet/hostfleet/agent/hostspec"
	"github.com/hostfleet/hostfleet/agent/hoststatus"
	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
)

// hostPlan is what applyHost writes for a bound claim: the hub secrets to
// copy next to the host, then the host's spec.
type hostPlan struct {
	refs        []hostspec.SecretRef
	secrets     []*corev1.Secret
	allowDetach bool
	// writes is whether applying writes anything: secret copies to write
	// or delete, or a host spec that differs.
	writes bool
}

// planHost reads what the host's spec and secret copies need, without
// writing, and returns the plan with the sync it will give. A problem the
// tenant must fix (a missing secret, a reference to another namespace) is a
// failed Sync and no plan: nothing is written on the host until it is fixed,
// so a host never deploys with half of its configuration.
func (r *Reconciler) planHost(ctx context.Context, c *metal3api.HostClaim, h *metal3api.BareMetalHost, allowDetach bool) (*hostPlan, hoststatus.Sync, error) {
	refs, err := hostspec.SecretRefs(c)
	var refErr *hostspec.RefError
	if errors.As(err, &refErr) {
		return nil, hoststatus.Sync{Reason: refErr.Role.SyncFailureReason(), Message: refErr.Msg}, nil
	}
	p := &hostPlan{refs: refs, allowDetach: allowDetach}
	for _, ref := range refs {
		hubSecret := &corev1.Secret{}
		if err := r.ClaimReader.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: ref.Name}, hubSecret); err != nil {
			if apierrors.IsNotFound(err) {
				return nil, hoststatus.Sync{Reason: ref.Role.SyncFailureReason(), Message: fmt.Sprintf(
					"secret %s/%s named by spec.%s does not exist; create it", c.Namespace, ref.Name, ref.Role.Field())}, nil
			}
			return nil, hoststatus.Sync{}, fmt.Errorf("get hub secret %s/%s: %w", c.Namespace, ref.Name, err)
		}
		p.secrets = append(p.secrets, hubSecret)
	}
	p.writes = len(refs) > 0 || len(hostspec.ReferencedCopies(h)) > 0 || !hostspec.UpToDate(h, hostspec.Bound(c, h, refs, allowDetach))
	return p, r.detachSync(c, h, allowDetach), nil
}

// applyHost copies the planned secrets next to the host and applies the
// host spec fields the agent owns. A copy or a spec the API server refuses
// is a failed Sync.
func (r *Reconciler) applyHost(ctx context.Context, c *metal3api.HostClaim, h *metal3api.BareMetalHost, p *hostPlan) (hoststatus.Sync, error) {
	keep := sets.New[string]()
	for i, ref := range p.refs {
		if err := r.Managed.Apply(ctx, hostspec.SecretCopy(c, ref, p.secrets[i], h.Namespace),
			client.FieldOwner(hostfleetv1alpha1.FieldManagerAgent), client.ForceOwnership); err != nil {
			if apierrors.IsRequestEntityTooLargeError(err) || apierrors.IsInvalid(err) {
				return hoststatus.Sync{Reason: ref.Role.SyncFailureReason(), Message: fmt.Sprintf(
					"secret %s/%s named by spec.%s cannot be copied to the host: %v; make it smaller", c.Namespace, ref.Name, ref.Role.Field(), apierrors.ReasonForError(err))}, nil
			}
			return hoststatus.Sync{}, fmt.Errorf("copy secret %s/%s to %s/%s: %w", c.Namespace, ref.Name, h.Namespace, ref.Copy, err)
		}
		keep.Insert(ref.Copy)
	}
	// Copies the host still names but the claim no longer references.
	for _, name := range hostspec.ReferencedCopies(h) {
		if keep.Has(name) {
			continue
		}
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: h.Namespace, Name: name}}
		if err := r.Managed.Delete(ctx, s); client.IgnoreNotFound(err) != nil {
			return hoststatus.Sync{}, fmt.Errorf("delete secret copy %s/%s: %w", h.Namespace, name, err)
		}
	}
	want := hostspec.Bound(c, h, p.refs, p.allowDetach)
	if hostspec.UpToDate(h, want) {
		return r.detachSync(c, h, p.allowDetach), nil
	}
	if err := r.Managed.Apply(ctx, client.ApplyConfigurationFromUnstructured(want),
		client.FieldOwner(hostfleetv1alpha1.FieldManagerAgent), client.ForceOwnership); err != nil {
		if apierrors.IsInvalid(err) {
			return hoststatus.Sync{Reason: metal3api.BareMetalHostNotSynchronizedReason, Message: fmt.Sprintf(
				"the host refused the claim's settings: %v; fix spec.image or spec.customDeploy", err)}, nil
		}
		return hoststatus.Sync{}, fmt.Errorf("apply host %s for %s/%s: %w", klog.KObj(h), c.Namespace, c.Name, err)
	}
	return r.detachSync(c, h, p.allowDetach), nil
}

// detachSync is the sync outcome once everything else is written: failed
// only if the claim asks to detach where that is not allowed.
func (r *Reconciler) detachSync(c *metal3api.HostClaim, h *metal3api.BareMetalHost, allowDetach bool) hoststatus.Sync {
	if hostspec.WantsDetach(c) && !allowDetach {
		return hoststatus.Sync{Reason: hostfleetv1alpha1.ReasonDetachNotAllowed, Message: fmt.Sprintf(
			"the claim asks to detach host %s/%s, but no HostDeployPolicy there allows it; remove %s from the claim, or ask the cluster administrator to annotate the policy %s=true",
			h.Namespace, h.Name, metal3api.DetachedAnnotation, hostfleetv1alpha1.AnnotationAllowDetach)}
	}
	return hoststatus.Sync{OK: true}
}

// deleteCopies deletes the claim's secret copies in the host's namespace,
// except those named in keep. Copies have deterministic names, so they are
// deleted by name: the agent never needs to read or list Secrets on the
// infrastructure cluster, where they include BMC credentials.
func (r *Reconciler) deleteCopies(ctx context.Context, c *metal3api.HostClaim, hostNamespace string, keep sets.Set[string]) error {
	for _, role := range hostspec.Roles {
		name := hostspec.CopyName(c, role)
		if keep.Has(name) {
			continue
		}
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: hostNamespace, Name: name}}
		if err := r.Managed.Delete(ctx, s); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("delete secret copy %s/%s: %w", hostNamespace, name, err)
		}
	}
	return nil
}
