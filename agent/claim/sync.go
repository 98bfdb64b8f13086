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

// readSpec reads the claim's data secrets from its namespace, for the
// host's spec and secret copies. A problem the tenant must fix (a missing
// secret, a reference to another namespace) is a failed Sync, not an
// error.
func (r *Reconciler) readSpec(ctx context.Context, c *metal3api.HostClaim) ([]hostspec.SecretRef, []*corev1.Secret, *hoststatus.Sync, error) {
	refs, err := hostspec.SecretRefs(c)
	var refErr *hostspec.RefError
	if errors.As(err, &refErr) {
		return nil, nil, &hoststatus.Sync{Reason: refErr.Role.SyncFailureReason(), Message: refErr.Msg}, nil
	}
	var secrets []*corev1.Secret
	for _, ref := range refs {
		hubSecret := &corev1.Secret{}
		if err := r.ClaimReader.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: ref.Name}, hubSecret); err != nil {
			if apierrors.IsNotFound(err) {
				return nil, nil, &hoststatus.Sync{Reason: ref.Role.SyncFailureReason(), Message: fmt.Sprintf(
					"secret %s/%s named by spec.%s does not exist; create it", c.Namespace, ref.Name, ref.Role.Field())}, nil
			}
			return nil, nil, nil, fmt.Errorf("get hub secret %s/%s: %w", c.Namespace, ref.Name, err)
		}
		secrets = append(secrets, hubSecret)
	}
	return refs, secrets, nil, nil
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
	want := hostspec.Bound(poweredAs(c, p.off), h, p.refs, p.allowDetach)
	if hostspec.UpToDate(h, want) {
		return detachSync(c, h, p.allowDetach), nil
	}
	if err := r.hosts.Apply(ctx, want); err != nil {
		if apierrors.IsInvalid(err) {
			return hoststatus.Sync{Reason: metal3api.BareMetalHostNotSynchronizedReason, Message: fmt.Sprintf(
				"the host refused the claim's settings: %v; fix spec.image or spec.customDeploy", err)}, nil
		}
		return hoststatus.Sync{}, fmt.Errorf("apply host %s for %s/%s: %w", klog.KObj(h), c.Namespace, c.Name, err)
	}
	return detachSync(c, h, p.allowDetach), nil
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
