package forwarder

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"open-cluster-management.io/api/utils/work/v1/workvalidator"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hostfleet/hostfleet/hub/api/erase"
	"github.com/hostfleet/hostfleet/hub/api/healing"
	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
	"github.com/hostfleet/hostfleet/internal/permissions"
)

// Secret roles: the claim's secret references a target claim has, and the
// suffix of their copies' names.
const (
	RoleUserData    = "userdata"
	RoleNetworkData = "networkdata"
	RoleMetaData    = "metadata"
)

// Input is what a claim's work is rendered from.
type Input struct {
	// Claim is the remote claim on the hub, placed on Cluster.
	Claim   *metal3api.HostClaim
	Cluster string
	// Tenant owns the claim's namespace; Erase is its spec.erase, which
	// the forwarded claim carries (hostfleet.io/erase, with the claim's
	// own if it asks more) for the target's agent.
	Tenant string
	Erase  hostfleetv1alpha1.EraseMode
	// Healing is its spec.healing: the claim's hostfleet.io/healing is
	// forwarded only within its bounds.
	Healing *hostfleetv1alpha1.Healing
	// Secrets are the secrets the claim references, by role; every
	// reference the claim has must be here.
	Secrets map[string]*corev1.Secret
	// RebootRequest identifies the one-shot reboot the claim asks for, if
	// any (see hostfleetv1alpha1.AnnotationRebootRequest).
	RebootRequest string
	// Agent is the Hostfleet agent's ServiceAccount on the cluster, when it
	// runs there: it may read the claim's secret copies (a Role beside
	// them), and nothing else of the namespace's. Nil: no agent, no Role.
	Agent *rbacv1.Subject
}

// Refused is an input the forwarder cannot forward: its reason and message
// go to the claim's Forwarded condition.
type Refused struct {
	Reason, Message string
}

func (r *Refused) Error() string { return r.Message }

// secretRoles are the claim's secret references, in the order their copies
// go in a work: the role (the copy's name suffix), the spec field, and the
// reference in a spec.
var secretRoles = []struct {
	role, field string
	ref         func(*metal3api.HostClaimSpec) **corev1.SecretReference
}{
	{RoleMetaData, "metaData", func(s *metal3api.HostClaimSpec) **corev1.SecretReference { return &s.MetaData }},
	{RoleNetworkData, "networkData", func(s *metal3api.HostClaimSpec) **corev1.SecretReference { return &s.NetworkData }},
	{RoleUserData, "userData", func(s *metal3api.HostClaimSpec) **corev1.SecretReference { return &s.UserData }},
}

// SecretRefs are the claim's secret references by role.
func SecretRefs(c *metal3api.HostClaim) map[string]*corev1.SecretReference {
	out := map[string]*corev1.SecretReference{}
	for _, r := range secretRoles {
		if ref := *r.ref(&c.Spec); ref != nil && ref.Name != "" {
			out[r.role] = ref
		}
	}
	return out
}

// ValidSecretName says whether a claim's secret reference can name a
// Secret at all (a DNS subdomain). Admission refuses any other on tenants'
// claims; the forwarder refuses it on a claim admitted before that rule, and
// never sends it to the API server.
func ValidSecretName(name string) bool { return len(validation.IsDNS1123Subdomain(name)) == 0 }

// Render is the claim's ManifestWork: the target namespace, the secret
// copies and the target claim, applied server-side under
// FieldManagerForwarder, with the target's status fed back through scalar
// JSONPath rules. A work over OCM's manifest size limit is refused.
func Render(in Input) (*workv1.ManifestWork, error) {
	c := in.Claim
	ns := TargetNamespace(c.Namespace)
	objs := []client.Object{&corev1.Namespace{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"},
		ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: map[string]string{
			hostfleetv1alpha1.LabelTenant: in.Tenant, hostfleetv1alpha1.LabelHubNamespace: c.Namespace}},
	}}
	target := &metal3api.HostClaim{
		TypeMeta: metav1.TypeMeta{APIVersion: metal3api.GroupVersion.String(), Kind: "HostClaim"},
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: c.Name, Labels: targetLabels(c.Labels),
			Annotations: targetAnnotations(c, in)},
		Spec: *c.Spec.DeepCopy(),
	}
	secrets, copies, err := secretCopies(in, target)
	if err != nil {
		return nil, err
	}
	objs = append(objs, secrets...)
	if in.Agent != nil && len(copies) > 0 {
		objs = append(objs, secretReader(ns, c.Name, copies, *in.Agent)...)
	}
	objs = append(objs, target)
	w, err := manifestWork(in, objs, copies)
	if err != nil {
		return nil, err
	}
	if err := workvalidator.ManifestValidator.ValidateManifests(w.Spec.Workload.Manifests); err != nil {
		return nil, &Refused{Reason: hostfleetv1alpha1.ReasonWorkTooLarge, Message: fmt.Sprintf(
			"the claim and its secrets cannot be forwarded in one ManifestWork: %v (%s); make the secrets smaller",
			err, sizes(objs, w.Spec.Workload.Manifests))}
	}
	return w, nil
}

// secretCopies are the copies of the claim's secrets in the target
// namespace, pointed at by the target claim; refused when a reference
// names another namespace's secret, an invalid name or a missing secret.
func secretCopies(in Input, target *metal3api.HostClaim) (objs []client.Object, copies []string, _ error) {
	c := in.Claim
	for _, r := range secretRoles {
		ref := *r.ref(&c.Spec)
		if ref == nil || ref.Name == "" {
			continue
		}
		// A tenant may read only its own namespaces' secrets: the hub must
		// not carry another's to a cluster.
		if ref.Namespace != "" && ref.Namespace != c.Namespace {
			return nil, nil, &Refused{Reason: hostfleetv1alpha1.ReasonSecretInvalid, Message: fmt.Sprintf(
				"spec.%s names secret %s/%s, outside the claim's namespace %s: a remote claim forwards only secrets of its own namespace; copy the secret to %s and clear the reference's namespace",
				r.field, ref.Namespace, ref.Name, c.Namespace, c.Namespace)}
		}
		if !ValidSecretName(ref.Name) {
			return nil, nil, &Refused{Reason: hostfleetv1alpha1.ReasonSecretInvalid, Message: fmt.Sprintf(
				"spec.%s names secret %q, which is not a valid Secret name (%s): name a Secret of the claim's namespace %s",
				r.field, ref.Name, strings.Join(validation.IsDNS1123Subdomain(ref.Name), "; "), c.Namespace)}
		}
		s := in.Secrets[r.role]
		if s == nil {
			return nil, nil, &Refused{Reason: hostfleetv1alpha1.ReasonSecretInvalid, Message: fmt.Sprintf(
				"spec.%s names secret %s, which does not exist in %s: create it", r.field, ref.Name, c.Namespace)}
		}
		name := SecretName(c.Name, r.role)
		copies = append(copies, name)
		objs = append(objs, &corev1.Secret{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
			ObjectMeta: metav1.ObjectMeta{Namespace: target.Namespace, Name: name, Labels: map[string]string{hostfleetv1alpha1.LabelClaimName: c.Name}},
			Type:       s.Type,
			Data:       s.Data,
		})
		*r.ref(&target.Spec) = &corev1.SecretReference{Name: name}
	}
	return objs, copies, nil
}

// manifestWork is the ManifestWork of objs: the target claim and the secret copies
// applied server-side, the target's status fed back.
func manifestWork(in Input, objs []client.Object, copies []string) (*workv1.ManifestWork, error) {
	c := in.Claim
	ns := TargetNamespace(c.Namespace)
	w := &workv1.ManifestWork{
		ObjectMeta: metav1.ObjectMeta{Namespace: in.Cluster, Name: WorkName(c.UID), Labels: map[string]string{
			hostfleetv1alpha1.LabelClaimNamespace: c.Namespace, hostfleetv1alpha1.LabelClaimName: c.Name,
			hostfleetv1alpha1.LabelClaimUID: string(c.UID), hostfleetv1alpha1.LabelTenant: in.Tenant,
		}},
		Spec: workv1.ManifestWorkSpec{
			// The namespace outlives any one claim: other claims' works
			// may be applying into it. The claim and the secrets are
			// deleted in the foreground, and the work goes only once the
			// target claim is gone (its controller releases the host
			// first).
			DeleteOption: &workv1.DeleteOption{PropagationPolicy: workv1.DeletePropagationPolicyTypeSelectivelyOrphan,
				SelectivelyOrphan: &workv1.SelectivelyOrphan{OrphaningRules: []workv1.OrphaningRule{{Resource: "namespaces", Name: ns}}}},
		},
	}
	for _, o := range objs {
		raw, err := json.Marshal(o)
		if err != nil {
			return nil, fmt.Errorf("render %T: %w", o, err)
		}
		w.Spec.Workload.Manifests = append(w.Spec.Workload.Manifests, workv1.Manifest{RawExtension: runtime.RawExtension{Raw: raw}})
	}
	apply := &workv1.UpdateStrategy{Type: workv1.UpdateStrategyTypeServerSideApply,
		ServerSideApply: &workv1.ServerSideApplyConfig{FieldManager: hostfleetv1alpha1.FieldManagerForwarder, Force: true}}
	w.Spec.ManifestConfigs = []workv1.ManifestConfigOption{{
		ResourceIdentifier: workv1.ResourceIdentifier{Group: metal3api.GroupVersion.Group, Resource: "hostclaims", Namespace: ns, Name: c.Name},
		UpdateStrategy:     apply,
		FeedbackRules:      []workv1.FeedbackRule{{Type: workv1.JSONPathsType, JsonPaths: FeedbackPaths()}},
		// Feedback follows the target's changes (a watch per namespace,
		// falling back to polling past the agent's watch limit).
		FeedbackScrapeType: workv1.FeedbackWatchType,
	}}
	for _, name := range copies {
		w.Spec.ManifestConfigs = append(w.Spec.ManifestConfigs, workv1.ManifestConfigOption{
			ResourceIdentifier: workv1.ResourceIdentifier{Resource: "secrets", Namespace: ns, Name: name},
			UpdateStrategy:     apply,
			// The API server's default, written out: a work read back
			// has it, and one rendered without it would differ (Unchanged).
			FeedbackScrapeType: workv1.FeedbackPollType,
		})
	}
	return w, nil
}

// secretReader is the Role that lets the agent serving the target claim
// read its secret copies, by name, and its RoleBinding: the agent reads no
// other Secret of the namespace (permissions.ForwardedClaimSecrets).
func secretReader(ns, claim string, copies []string, agent rbacv1.Subject) []client.Object {
	meta := metav1.ObjectMeta{Namespace: ns, Name: SecretReaderName(claim), Labels: map[string]string{hostfleetv1alpha1.LabelClaimName: claim}}
	return []client.Object{
		&rbacv1.Role{TypeMeta: metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "Role"}, ObjectMeta: meta,
			Rules: permissions.ForwardedClaimSecrets(copies)},
		&rbacv1.RoleBinding{TypeMeta: metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "RoleBinding"}, ObjectMeta: meta,
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: meta.Name}, Subjects: []rbacv1.Subject{agent}},
	}
}

// sizes says how large each forwarded object is.
func sizes(objs []client.Object, manifests []workv1.Manifest) string {
	parts := make([]string, len(objs))
	for i, o := range objs {
		parts[i] = fmt.Sprintf("%s %s: %d bytes", o.GetObjectKind().GroupVersionKind().Kind, o.GetName(), manifests[i].Size())
	}
	return strings.Join(parts, ", ")
}

// targetLabels are the claim's labels but Hostfleet's own (kind, cluster,
// bound host): on the target the claim is a plain metal3 claim.
func targetLabels(in map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range in {
		if !strings.HasPrefix(k, "hostfleet.io/") {
			out[k] = v
		}
	}
	return out
}

// targetHealing is the healing the claim gets on its target, as a local
// claim's hostfleet.io/healing: its tenant's policy, with its own
// annotation where that stays within the tenant's bounds (else the
// tenant's alone, as on the pull path), Replace only (the target notifies
// by default), within what a target allows without a tenant: a grace of
// at least healing.DefaultGrace, never unfenced, the default daily cap.
func targetHealing(c *metal3api.HostClaim, in Input) (string, bool) {
	p, _ := healing.Effective(in.Healing, c.Annotations)
	if p.Action != hostfleetv1alpha1.HealingReplace {
		return "", false
	}
	return fmt.Sprintf("%s,grace=%s", p.Action, max(p.Grace, healing.DefaultGrace)), true
}

// targetAnnotations carry the reboot requests, detach and pause (metal3's),
// the erase its tenant and the claim ask,
// the host classes the claim is kept off, the taints it tolerates, the
// hardware and the healing (targetHealing) it asks (which the target's
// agent honours)
// and where the claim came from; the claim's other annotations,
// its lease among them (only the hub ends it), stay on the hub.
func targetAnnotations(c *metal3api.HostClaim, in Input) map[string]string {
	out := map[string]string{
		hostfleetv1alpha1.AnnotationSourceClaim:    c.Namespace + "/" + c.Name,
		hostfleetv1alpha1.AnnotationSourceClaimUID: string(c.UID),
	}
	for k, v := range c.Annotations {
		if strings.HasPrefix(k, metal3api.RebootAnnotationPrefix+"/") || k == metal3api.DetachedAnnotation || k == hostfleetv1alpha1.AnnotationPaused ||
			k == hostfleetv1alpha1.AnnotationExcludedHosts || k == hostfleetv1alpha1.AnnotationTolerations || k == hostfleetv1alpha1.AnnotationHardware {
			out[k] = v
		}
	}
	if v, ok := targetHealing(c, in); ok {
		out[hostfleetv1alpha1.AnnotationHealing] = v
	}
	if e := erase.Max(in.Erase, erase.Of(c.Annotations)); erase.Level(e) > 0 {
		out[hostfleetv1alpha1.AnnotationErase] = string(e)
	}
	if v, ok := c.Annotations[metal3api.RebootAnnotationPrefix]; ok && in.RebootRequest != "" {
		out[metal3api.RebootAnnotationPrefix] = v
		out[hostfleetv1alpha1.AnnotationRebootRequest] = in.RebootRequest
	}
	return out
}

// Unchanged reports whether a stored work already is the rendered one (its
// spec and labels). The API server hands each manifest back re-encoded,
// its keys sorted, so manifests compare as JSON values, not as bytes:
// compared as bytes, every reconcile of a forwarded claim would rewrite its
// work unchanged.
func Unchanged(stored, rendered *workv1.ManifestWork) bool {
	a, b := stored.Spec, rendered.Spec
	am, bm := a.Workload.Manifests, b.Workload.Manifests
	a.Workload.Manifests, b.Workload.Manifests = nil, nil
	if len(am) != len(bm) || !equality.Semantic.DeepEqual(a, b) || !equality.Semantic.DeepEqual(stored.Labels, rendered.Labels) {
		return false
	}
	for i := range am {
		if !sameJSON(am[i].Raw, bm[i].Raw) {
			return false
		}
	}
	return true
}

// sameJSON reports whether two JSON documents hold the same value.
func sameJSON(a, b []byte) bool {
	if bytes.Equal(a, b) {
		return true
	}
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	return reflect.DeepEqual(x, y)
}
