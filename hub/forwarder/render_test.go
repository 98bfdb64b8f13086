package forwarder

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	workv1 "open-cluster-management.io/api/work/v1"

	"github.com/hostfleet/hostfleet/hub/api/healing"
	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
	"github.com/hostfleet/hostfleet/internal/permissions"
)

// TestTargetNamespace: deterministic, within the 63-character limit, and
// never the same for two hub namespaces (hub namespaces are unique, and each
// belongs to one tenant), even where a cut name would collide.
func TestTargetNamespace(t *testing.T) {
	g := NewWithT(t)
	g.Expect(TargetNamespace("tenant-a")).To(Equal("hf-tenant-a"))
	long1, long2 := strings.Repeat("a", 60)+"-one", strings.Repeat("a", 60)+"-two"
	n1, n2 := TargetNamespace(long1), TargetNamespace(long2)
	g.Expect(len(n1)).To(BeNumerically("<=", 63))
	g.Expect(n1).NotTo(Equal(n2))
	g.Expect(TargetNamespace(long1)).To(Equal(n1), "deterministic")
	g.Expect(SecretName("web", RoleUserData)).To(Equal("web-userdata"))
	g.Expect(len(SecretName(strings.Repeat("w", 253), RoleUserData))).To(BeNumerically("<=", 253))
}

func claim() *metal3api.HostClaim {
	return &metal3api.HostClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: "tenant-a", Name: "web", UID: "u-1",
			Labels: map[string]string{hostfleetv1alpha1.LabelKind: hostfleetv1alpha1.KindRemote, hostfleetv1alpha1.LabelCluster: "c1", "app": "web"},
			Annotations: map[string]string{hostfleetv1alpha1.AnnotationPlacedBy: "scheduler", "note": "hub only",
				metal3api.RebootAnnotationPrefix + "/maint": "", metal3api.RebootAnnotationPrefix: `{"mode":"hard"}`,
				hostfleetv1alpha1.AnnotationPaused: "metal3.io/capm3"}},
		Spec: metal3api.HostClaimSpec{PoweredOn: true, UserData: &corev1.SecretReference{Name: "ud"},
			MetaData: &corev1.SecretReference{Namespace: "tenant-a", Name: "md"}},
	}
}

func decode[T any](g Gomega, m workv1.Manifest) *T {
	out := new(T)
	g.Expect(json.Unmarshal(m.Raw, out)).To(Succeed())
	return out
}

func TestRender(t *testing.T) {
	g := NewWithT(t)
	secrets := map[string]*corev1.Secret{
		RoleUserData: {Data: map[string][]byte{"userData": []byte("u")}},
		RoleMetaData: {Data: map[string][]byte{"metaData": []byte("m")}},
	}
	w, err := Render(Input{Claim: claim(), Cluster: "c1", Tenant: "a", Secrets: secrets, RebootRequest: "r1"})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(w.Namespace).To(Equal("c1"))
	g.Expect(w.Name).To(Equal("hostclaim-u-1"))
	g.Expect(w.Labels).To(HaveKeyWithValue(hostfleetv1alpha1.LabelClaimUID, "u-1"))
	g.Expect(w.Spec.Workload.Manifests).To(HaveLen(4), "namespace, two secrets, the claim")

	ns := decode[corev1.Namespace](g, w.Spec.Workload.Manifests[0])
	g.Expect(ns.Name).To(Equal("hf-tenant-a"))
	g.Expect(ns.Labels).To(Equal(map[string]string{hostfleetv1alpha1.LabelTenant: "a", hostfleetv1alpha1.LabelHubNamespace: "tenant-a"}))
	md := decode[corev1.Secret](g, w.Spec.Workload.Manifests[1])
	g.Expect(md.Namespace + "/" + md.Name).To(Equal("hf-tenant-a/web-metadata"))
	g.Expect(md.Data).To(HaveKey("metaData"))

	target := decode[metal3api.HostClaim](g, w.Spec.Workload.Manifests[3])
	g.Expect(target.Namespace + "/" + target.Name).To(Equal("hf-tenant-a/web"))
	g.Expect(target.Labels).To(Equal(map[string]string{"app": "web"}))
	g.Expect(target.Annotations).To(Equal(map[string]string{
		hostfleetv1alpha1.AnnotationSourceClaim: "tenant-a/web", hostfleetv1alpha1.AnnotationSourceClaimUID: "u-1",
		metal3api.RebootAnnotationPrefix + "/maint": "", metal3api.RebootAnnotationPrefix: `{"mode":"hard"}`,
		hostfleetv1alpha1.AnnotationRebootRequest: "r1", hostfleetv1alpha1.AnnotationPaused: "metal3.io/capm3",
	}), "reboots, and the pause, flow to the target")
	g.Expect(target.Spec.UserData).To(Equal(&corev1.SecretReference{Name: "web-userdata"}))
	g.Expect(target.Spec.MetaData).To(Equal(&corev1.SecretReference{Name: "web-metadata"}))
	g.Expect(target.Spec.PoweredOn).To(BeTrue())

	g.Expect(w.Spec.ManifestConfigs[0].UpdateStrategy.ServerSideApply.FieldManager).To(HavePrefix("work-agent"))
	g.Expect(w.Spec.ManifestConfigs[0].FeedbackRules[0].JsonPaths).To(ContainElements(
		workv1.JsonPath{Name: "Ready.status", Path: `.status.conditions[?(@.type=="Ready")].status`},
		workv1.JsonPath{Name: "HostHealthy.message", Path: `.status.conditions[?(@.type=="HostHealthy")].message`}))
	g.Expect(w.Spec.DeleteOption.SelectivelyOrphan.OrphaningRules).To(ConsistOf(workv1.OrphaningRule{Resource: "namespaces", Name: "hf-tenant-a"}))

	t.Run("with the agent on the cluster: a Role lets its ServiceAccount read the copies, by name, and nothing else", func(t *testing.T) {
		g := NewWithT(t)
		agent := rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Namespace: "hostfleet-agent", Name: "hostfleet-agent"}
		w, err := Render(Input{Claim: claim(), Cluster: "c1", Tenant: "a", Secrets: secrets, Agent: &agent})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(w.Spec.Workload.Manifests).To(HaveLen(6), "namespace, two secrets, the Role and its binding, the claim")
		role := decode[rbacv1.Role](g, w.Spec.Workload.Manifests[3])
		g.Expect(role.Namespace + "/" + role.Name).To(Equal("hf-tenant-a/web-secrets-reader"))
		g.Expect(role.Rules).To(Equal(permissions.ForwardedClaimSecrets([]string{"web-metadata", "web-userdata"})))
		rb := decode[rbacv1.RoleBinding](g, w.Spec.Workload.Manifests[4])
		g.Expect(rb.Subjects).To(Equal([]rbacv1.Subject{agent}))
		g.Expect(rb.RoleRef.Name).To(Equal(role.Name))
		g.Expect(decode[metal3api.HostClaim](g, w.Spec.Workload.Manifests[5]).Name).To(Equal("web"), "the claim last: its secrets and their reader are there first")
	})

	t.Run("no pending reboot request: the one-shot reboot stays on the hub", func(t *testing.T) {
		g := NewWithT(t)
		w, err := Render(Input{Claim: claim(), Cluster: "c1", Tenant: "a", Secrets: secrets})
		g.Expect(err).NotTo(HaveOccurred())
		target := decode[metal3api.HostClaim](g, w.Spec.Workload.Manifests[3])
		g.Expect(target.Annotations).NotTo(HaveKey(metal3api.RebootAnnotationPrefix))
	})
	t.Run("the tenant's erase, or the claim's when it asks more, its tolerations, its hardware and its healing flow to the target", func(t *testing.T) {
		g := NewWithT(t)
		for _, tc := range []struct {
			tenant hostfleetv1alpha1.EraseMode
			claim  string
			want   string
		}{{"", "", ""}, {hostfleetv1alpha1.EraseMetadata, "", "Metadata"}, {hostfleetv1alpha1.EraseMetadata, "Full", "Full"}, {hostfleetv1alpha1.EraseFull, "None", "Full"}} {
			c := claim()
			c.Annotations[hostfleetv1alpha1.AnnotationTolerations] = "gpu"
			c.Annotations[hostfleetv1alpha1.AnnotationHardware] = "host.gpus.size() > 0"
			c.Annotations[hostfleetv1alpha1.AnnotationHealing] = "Replace,grace=10m"
			if tc.claim != "" {
				c.Annotations[hostfleetv1alpha1.AnnotationErase] = tc.claim
			}
			w, err := Render(Input{Claim: c, Cluster: "c1", Tenant: "a", Erase: tc.tenant, Secrets: secrets})
			g.Expect(err).NotTo(HaveOccurred())
			target := decode[metal3api.HostClaim](g, w.Spec.Workload.Manifests[3])
			g.Expect(target.Annotations).To(HaveKeyWithValue(hostfleetv1alpha1.AnnotationTolerations, "gpu"))
			g.Expect(target.Annotations).To(HaveKeyWithValue(hostfleetv1alpha1.AnnotationHardware, "host.gpus.size() > 0"))
			g.Expect(target.Annotations).To(HaveKeyWithValue(hostfleetv1alpha1.AnnotationHealing, "Replace,grace=10m0s"))
			c.Annotations[hostfleetv1alpha1.AnnotationHealing] = "Replace,unfenced"
			w, err = Render(Input{Claim: c, Cluster: "c1", Tenant: "a", Erase: tc.tenant, Secrets: secrets})
			g.Expect(err).NotTo(HaveOccurred())
			target = decode[metal3api.HostClaim](g, w.Spec.Workload.Manifests[3])
			g.Expect(target.Annotations).NotTo(HaveKey(hostfleetv1alpha1.AnnotationHealing), "unfenced, which the tenant does not allow: the tenant's Notify")
			if tc.want == "" {
				g.Expect(target.Annotations).NotTo(HaveKey(hostfleetv1alpha1.AnnotationErase))
				continue
			}
			g.Expect(target.Annotations).To(HaveKeyWithValue(hostfleetv1alpha1.AnnotationErase, tc.want), "tenant %s, claim %s", tc.tenant, tc.claim)
		}
	})
	t.Run("the tenant's healing flows to the target, within what a target allows without a tenant", func(t *testing.T) {
		g := NewWithT(t)
		grace := func(d time.Duration) *metav1.Duration { return &metav1.Duration{Duration: d} }
		replace := hostfleetv1alpha1.HealingReplace
		for _, tc := range []struct {
			name   string
			tenant *hostfleetv1alpha1.Healing
			claim  string
			want   string
		}{
			{"no policy: the target notifies", nil, "", ""},
			{"the tenant's Notify", &hostfleetv1alpha1.Healing{Action: hostfleetv1alpha1.HealingNotify}, "", ""},
			{"the tenant's Replace", &hostfleetv1alpha1.Healing{Action: replace, Grace: grace(10 * time.Minute)}, "", "Replace,grace=10m0s"},
			{"a grace under the target's least: raised to it", &hostfleetv1alpha1.Healing{Action: replace, Grace: grace(time.Minute)}, "", "Replace,grace=5m0s"},
			{"the claim's own, within the tenant's bounds", &hostfleetv1alpha1.Healing{Action: replace, Grace: grace(time.Minute)}, "Replace,grace=20m", "Replace,grace=20m0s"},
			{"the claim's Notify", &hostfleetv1alpha1.Healing{Action: replace}, "Notify", ""},
			{"unfenced, which no target allows: dropped", &hostfleetv1alpha1.Healing{Action: replace, AllowUnfenced: true}, "Replace,unfenced", "Replace,grace=5m0s"},
			{"a claim's grace shorter than its tenant's: the tenant's", &hostfleetv1alpha1.Healing{Action: replace, Grace: grace(30 * time.Minute)}, "Replace,grace=6m", "Replace,grace=30m0s"},
		} {
			c := claim()
			if tc.claim != "" {
				c.Annotations[hostfleetv1alpha1.AnnotationHealing] = tc.claim
			}
			w, err := Render(Input{Claim: c, Cluster: "c1", Tenant: "a", Healing: tc.tenant, Secrets: secrets})
			g.Expect(err).NotTo(HaveOccurred())
			target := decode[metal3api.HostClaim](g, w.Spec.Workload.Manifests[3])
			if tc.want == "" {
				g.Expect(target.Annotations).NotTo(HaveKey(hostfleetv1alpha1.AnnotationHealing), tc.name)
				continue
			}
			g.Expect(target.Annotations).To(HaveKeyWithValue(hostfleetv1alpha1.AnnotationHealing, tc.want), tc.name)
			_, err = healing.Effective(nil, target.Annotations)
			g.Expect(err).NotTo(HaveOccurred(), "%s: the target honours it", tc.name)
		}
	})
	t.Run("refusals", func(t *testing.T) {
		g := NewWithT(t)
		other := claim()
		other.Spec.UserData.Namespace = "tenant-b"
		_, err := Render(Input{Claim: other, Cluster: "c1", Tenant: "a", Secrets: secrets})
		g.Expect(err).To(BeAssignableToTypeOf(&Refused{}))
		g.Expect(err.(*Refused).Reason).To(Equal(hostfleetv1alpha1.ReasonSecretInvalid))

		for _, name := range []string{"../tenant-x/web-userdata", "UD", strings.Repeat("u", 254)} {
			bad := claim()
			bad.Spec.UserData.Name = name
			_, err = Render(Input{Claim: bad, Cluster: "c1", Tenant: "a", Secrets: secrets})
			g.Expect(err).To(BeAssignableToTypeOf(&Refused{}), name)
			g.Expect(err.(*Refused).Reason).To(Equal(hostfleetv1alpha1.ReasonSecretInvalid), name)
			g.Expect(err).To(MatchError(ContainSubstring("which is not a valid Secret name")), name)
		}

		_, err = Render(Input{Claim: claim(), Cluster: "c1", Tenant: "a", Secrets: map[string]*corev1.Secret{RoleUserData: secrets[RoleUserData]}})
		g.Expect(err).To(MatchError(ContainSubstring("spec.metaData names secret md, which does not exist in tenant-a")))

		big := map[string]*corev1.Secret{RoleUserData: {Data: map[string][]byte{"userData": make([]byte, 400*1024)}},
			RoleMetaData: {Data: map[string][]byte{"metaData": make([]byte, 200*1024)}}}
		_, err = Render(Input{Claim: claim(), Cluster: "c1", Tenant: "a", Secrets: big})
		g.Expect(err).To(BeAssignableToTypeOf(&Refused{}))
		g.Expect(err.(*Refused).Reason).To(Equal(hostfleetv1alpha1.ReasonWorkTooLarge))
		g.Expect(err.Error()).To(ContainSubstring("Secret web-userdata: "), "says which object is how large")
	})
}

// TestUnchanged: a work as the API server returns it (each manifest
// re-encoded, its keys sorted) is the rendered one; a changed manifest, a
// missing one or a changed label is not.
func TestUnchanged(t *testing.T) {
	g := NewWithT(t)
	render := func(mut func(*metal3api.HostClaim)) *workv1.ManifestWork {
		c := claim()
		if mut != nil {
			mut(c)
		}
		w, err := Render(Input{Claim: c, Cluster: "c1", Tenant: "a", Secrets: map[string]*corev1.Secret{
			RoleUserData: {Data: map[string][]byte{"userData": []byte("u")}},
			RoleMetaData: {Data: map[string][]byte{"metaData": []byte("m")}},
		}})
		g.Expect(err).NotTo(HaveOccurred())
		return w
	}
	// stored re-encodes every manifest as the API server does: through a
	// map, so with its keys sorted.
	stored := func(w *workv1.ManifestWork) *workv1.ManifestWork {
		s := w.DeepCopy()
		for i, m := range s.Spec.Workload.Manifests {
			var v map[string]any
			g.Expect(json.Unmarshal(m.Raw, &v)).To(Succeed())
			raw, err := json.Marshal(v)
			g.Expect(err).NotTo(HaveOccurred())
			s.Spec.Workload.Manifests[i].Raw = raw
		}
		return s
	}
	w := render(nil)
	s := stored(w)
	g.Expect(string(s.Spec.Workload.Manifests[1].Raw)).NotTo(Equal(string(w.Spec.Workload.Manifests[1].Raw)), "the stored bytes differ")
	g.Expect(Unchanged(s, w)).To(BeTrue(), "the same work")

	image := render(func(c *metal3api.HostClaim) { c.Spec.Image = &metal3api.Image{URL: "http://images/two.qcow2"} })
	g.Expect(Unchanged(s, image)).To(BeFalse(), "a new image")
	fewer := w.DeepCopy()
	fewer.Spec.Workload.Manifests = fewer.Spec.Workload.Manifests[1:]
	g.Expect(Unchanged(s, fewer)).To(BeFalse(), "a manifest less")
	relabelled := w.DeepCopy()
	relabelled.Labels[hostfleetv1alpha1.LabelTenant] = "b"
	g.Expect(Unchanged(s, relabelled)).To(BeFalse(), "a label changed")
	orphan := w.DeepCopy()
	orphan.Spec.DeleteOption = nil
	g.Expect(Unchanged(s, orphan)).To(BeFalse(), "another delete option")
}
