package hostspec

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"

	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
)

// Role is which of the claim's secrets a copy holds.
type Role string

const (
	UserData    Role = "userdata"
	NetworkData Role = "networkdata"
	MetaData    Role = "metadata"
)

// Roles are all the roles a secret copy can have.
var Roles = []Role{UserData, NetworkData, MetaData}

// SyncFailureReason is the Synchronized condition reason, as upstream, when
// the secret of a role cannot be copied.
func (r Role) SyncFailureReason() string {
	switch r {
	case UserData:
		return metal3api.BadUserDataSecretReason
	case NetworkData:
		return metal3api.BadNetworkDataSecretReason
	default:
		return metal3api.BadMetaDataSecretReason
	}
}

// Field is the claim and host spec field of a role.
func (r Role) Field() string {
	switch r {
	case UserData:
		return "userData"
	case NetworkData:
		return "networkData"
	default:
		return "metaData"
	}
}

// SecretRef is one secret a claim references.
type SecretRef struct {
	Role Role
	// Name of the secret in the claim's hub namespace.
	Name string
	// Copy is the name of its copy in the host's namespace.
	Copy string
}

// RefError is a secret reference that cannot be honoured; its message says
// what to fix.
type RefError struct {
	Role Role
	Msg  string
}

func (e *RefError) Error() string { return e.Msg }

// SecretRefs lists the secrets a claim references. A reference to another
// namespace is refused: a tenant may only hand over its own secrets.
func SecretRefs(c *metal3api.HostClaim) ([]SecretRef, error) {
	var out []SecretRef
	for _, r := range []struct {
		role Role
		ref  *corev1.SecretReference
	}{{UserData, c.Spec.UserData}, {NetworkData, c.Spec.NetworkData}, {MetaData, c.Spec.MetaData}} {
		if r.ref == nil || r.ref.Name == "" {
			continue
		}
		if r.ref.Namespace != "" && r.ref.Namespace != c.Namespace {
			return nil, &RefError{Role: r.role, Msg: fmt.Sprintf(
				"spec.%s names secret %s/%s: secrets must be in the claim's namespace %s; remove the namespace or copy the secret there",
				r.role.Field(), r.ref.Namespace, r.ref.Name, c.Namespace)}
		}
		out = append(out, SecretRef{Role: r.role, Name: r.ref.Name, Copy: CopyName(c, r.role)})
	}
	return out, nil
}

// CopyName is the deterministic name of the copy of a claim's secret: the same
// claim always gets the same name, different claims (even of the same name in
// another namespace, or recreated) never share one.
func CopyName(c *metal3api.HostClaim, role Role) string {
	sum := sha256.Sum256([]byte(c.Namespace + "/" + c.Name + "/" + string(c.UID)))
	return "hostfleet-" + hex.EncodeToString(sum[:])[:16] + "-" + string(role)
}

// ClaimLabels identify the objects the agent made for a claim.
func ClaimLabels(c *metal3api.HostClaim) map[string]string {
	return map[string]string{
		hostfleetv1alpha1.LabelClaimNamespace: c.Namespace,
		hostfleetv1alpha1.LabelClaimName:      c.Name,
		hostfleetv1alpha1.LabelClaimUID:       string(c.UID),
	}
}

// SecretCopy is the copy of a hub secret in the host's namespace: same type
// and data, labelled with the claim's identity.
func SecretCopy(c *metal3api.HostClaim, ref SecretRef, hubSecret *corev1.Secret, hostNamespace string) *corev1ac.SecretApplyConfiguration {
	labels := ClaimLabels(c)
	labels[hostfleetv1alpha1.LabelSecretRole] = string(ref.Role)
	return corev1ac.Secret(ref.Copy, hostNamespace).WithLabels(labels).WithType(hubSecret.Type).WithData(hubSecret.Data)
}

// Bound is the apply object for a host bound to a claim: online follows
// poweredOn; image, customDeploy and the secret references follow the claim.
// Fields left out are released by the field manager (and so removed unless
// someone else owns them).
//
// The claim's baremetalhost.metal3.io/detached annotation is passed on only
// when allowDetach (the host's HostDeployPolicy allows it).
func Bound(c *metal3api.HostClaim, h *metal3api.BareMetalHost, refs []SecretRef, allowDetach bool) *unstructured.Unstructured {
	spec := map[string]interface{}{"online": c.Spec.PoweredOn}
	if img := c.Spec.Image; img != nil {
		m := map[string]interface{}{"url": img.URL}
		if img.Checksum != "" {
			m["checksum"] = img.Checksum
		}
		if img.ChecksumType != "" {
			m["checksumType"] = string(img.ChecksumType)
		}
		if img.DiskFormat != nil {
			m["format"] = *img.DiskFormat
		}
		spec["image"] = m
	}
	if cd := c.Spec.CustomDeploy; cd != nil {
		spec["customDeploy"] = map[string]interface{}{"method": cd.Method}
	}
	for _, r := range refs {
		spec[r.Role.Field()] = map[string]interface{}{"name": r.Copy, "namespace": h.Namespace}
	}
	u := applyObject(h, spec)
	ann := PersistentReboots(c)
	if v, ok := c.Annotations[metal3api.DetachedAnnotation]; ok && allowDetach {
		ann[metal3api.DetachedAnnotation] = v
	}
	if len(ann) > 0 {
		m := map[string]interface{}{}
		for k, v := range ann {
			m[k] = v
		}
		u.Object["metadata"].(map[string]interface{})["annotations"] = m
	}
	return u
}

// PersistentReboots are the claim's reboot.metal3.io/<key> annotations. Each
// keeps the host powered off (upstream semantics) until the key disappears
// from the claim; the agent applies them as owned fields, so removing one from
// the claim removes it from the host.
func PersistentReboots(c *metal3api.HostClaim) map[string]string {
	out := map[string]string{}
	for k, v := range c.Annotations {
		if strings.HasPrefix(k, metal3api.RebootAnnotationPrefix+"/") {
			out[k] = v
		}
	}
	return out
}

// OneShotReboot is the claim's reboot.metal3.io annotation: a single reboot
// request, handed to the host once (baremetal-operator removes it from the
// host when done) and then removed from the claim.
func OneShotReboot(c *metal3api.HostClaim) (string, bool) {
	v, ok := c.Annotations[metal3api.RebootAnnotationPrefix]
	return v, ok
}

// WantsDetach reports whether the claim asks for its host to be detached.
func WantsDetach(c *metal3api.HostClaim) bool {
	_, ok := c.Annotations[metal3api.DetachedAnnotation]
	return ok
}

// Released is the apply object for a host being released: powered off, with
// no image, deploy method or secrets, which makes baremetal-operator
// deprovision it.
func Released(h *metal3api.BareMetalHost) *unstructured.Unstructured {
	return applyObject(h, map[string]interface{}{"online": false})
}

func applyObject(h *metal3api.BareMetalHost, spec map[string]interface{}) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": metal3api.GroupVersion.String(),
		"kind":       "BareMetalHost",
		"metadata":   map[string]interface{}{"name": h.Name, "namespace": h.Namespace},
		"spec":       spec,
	}}
	return u
}

// HasWorkload reports whether the claim asks for something to be deployed.
func HasWorkload(c *metal3api.HostClaim) bool {
	return c.Spec.Image != nil || c.Spec.CustomDeploy != nil
}

// Settled reports whether a released host has finished deprovisioning and can
// be handed to another claim: nothing left to deploy, and its BMC read off
// (status.poweredOn follows the reads, for baremetal-operator and the BMC
// driver alike), so that no claim gets a host still running the previous
// tenant's system.
func Settled(h *metal3api.BareMetalHost) bool { return Releasing(h) == "" }

// Releasing says what a released host still waits for, or "" when it is
// Settled.
func Releasing(h *metal3api.BareMetalHost) string {
	switch h.Status.Provisioning.State {
	case metal3api.StateProvisioning, metal3api.StateProvisioned, metal3api.StateDeprovisioning,
		metal3api.StateExternallyProvisioned, metal3api.StatePreparing:
		return fmt.Sprintf("waiting for it to deprovision (%s)", h.Status.Provisioning.State)
	}
	switch {
	case h.Spec.Image != nil || h.Spec.CustomDeploy != nil:
		return "waiting for its image to be removed"
	case h.Status.PoweredOn:
		return "waiting for its BMC to report it off"
	}
	return ""
}

// ownedSpecFields are the host spec fields the agent owns.
var ownedSpecFields = []string{"online", "image", "customDeploy", "userData", "networkData", "metaData"}

// UpToDate reports whether the host already has exactly what the apply
// object asks for in the fields the agent owns, so the apply can be skipped:
// an unchanged host costs no write.
func UpToDate(h *metal3api.BareMetalHost, want *unstructured.Unstructured) bool {
	have, err := runtime.DefaultUnstructuredConverter.ToUnstructured(h)
	if err != nil {
		return false
	}
	haveSpec, _ := have["spec"].(map[string]interface{})
	wantSpec, _ := want.Object["spec"].(map[string]interface{})
	for _, k := range ownedSpecFields {
		hv, hok := haveSpec[k]
		wv, wok := wantSpec[k]
		if k == "online" && !hok {
			hv, hok = false, true
		}
		if hok != wok || !equality.Semantic.DeepEqual(hv, wv) {
			return false
		}
	}
	wantAnn := want.GetAnnotations()
	for k, v := range wantAnn {
		if hv, ok := h.Annotations[k]; !ok || hv != v {
			return false
		}
	}
	for k := range h.Annotations {
		if _, ok := wantAnn[k]; !ok && (strings.HasPrefix(k, metal3api.RebootAnnotationPrefix+"/") || k == metal3api.DetachedAnnotation) {
			return false
		}
	}
	return true
}

// ReferencedCopies are the copy secrets the host's spec names.
func ReferencedCopies(h *metal3api.BareMetalHost) []string {
	var out []string
	for _, ref := range []*corev1.SecretReference{h.Spec.UserData, h.Spec.NetworkData, h.Spec.MetaData} {
		if ref != nil && strings.HasPrefix(ref.Name, "hostfleet-") {
			out = append(out, ref.Name)
		}
	}
	return out
}
