package forwarder

import (
	"strings"
	"testing"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	workv1 "open-cluster-management.io/api/work/v1"

	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
)

// FuzzRender: whatever a claim says (names, annotations, secret
// references), Render refuses it or renders a work whose target is the
// claim, in the tenant's target namespace, carrying none of the hub's own
// annotations but those it forwards.
func FuzzRender(f *testing.F) {
	f.Add("web", "web-userdata", "", "reboot.metal3.io/x", "{}", "Full", "gpu")
	f.Add("a", "../x", "tenant-b", "hostfleet.io/lease-until", "2026-01-01T00:00:00Z", "", "")
	f.Add(strings.Repeat("n", 70), "UD", "tenant-a", "hostfleet.io/released-by", "x", "wipe", "a b")
	f.Fuzz(func(t *testing.T, name, secret, secretNS, annKey, annValue, erase, tolerations string) {
		if len(validation.IsDNS1123Subdomain(name)) > 0 {
			return // the API server refuses such a claim before any controller sees it
		}
		c := &metal3api.HostClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant-a", Name: name, UID: "u-1",
			Annotations: map[string]string{annKey: annValue, hostfleetv1alpha1.AnnotationErase: erase, hostfleetv1alpha1.AnnotationTolerations: tolerations}}}
		c.Spec.UserData = &corev1.SecretReference{Name: secret, Namespace: secretNS}
		secrets := map[string]*corev1.Secret{RoleUserData: {Data: map[string][]byte{"userData": []byte("u")}}}
		w, err := Render(Input{Claim: c, Cluster: "c1", Tenant: "a", Erase: hostfleetv1alpha1.EraseMetadata, Secrets: secrets})
		if err != nil {
			return
		}
		target := decode[metal3api.HostClaim](NewWithT(t), w.Spec.Workload.Manifests[len(w.Spec.Workload.Manifests)-1])
		if target.Name != name || target.Namespace != TargetNamespace("tenant-a") {
			t.Fatalf("target %s/%s for claim %s", target.Namespace, target.Name, name)
		}
		for k := range target.Annotations {
			switch k {
			case hostfleetv1alpha1.AnnotationLeaseUntil, hostfleetv1alpha1.AnnotationLeaseFor, hostfleetv1alpha1.AnnotationReleasedBy, hostfleetv1alpha1.AnnotationReservedHost:
				t.Fatalf("the hub's own %s reached the target", k)
			}
		}
		if target.Annotations[hostfleetv1alpha1.AnnotationErase] == "" || target.Annotations[hostfleetv1alpha1.AnnotationErase] == "None" {
			t.Fatalf("the tenant's erase did not reach the target: %v", target.Annotations)
		}
	})
}

// FuzzStatus: whatever the work agent reports of the target, the claim's
// conditions stay valid (a known status, a reason the API accepts) and
// Ready is never True unless the target is bound.
func FuzzStatus(f *testing.F) {
	f.Add("True", "Ready", "ok", "True", "h0", true, true)
	f.Add("Maybe", "", strings.Repeat("m", 40000), "False", "", false, true)
	f.Add("True", "not a reason", "", "True", "h1", true, false)
	f.Fuzz(func(t *testing.T, status, reason, message, associated, host string, synced, applied bool) {
		str := func(s string) workv1.FieldValue { return workv1.FieldValue{Type: workv1.String, String: &s} }
		values := []workv1.FeedbackValue{
			{Name: hostfleetv1alpha1.ConditionReady + ".status", Value: str(status)},
			{Name: hostfleetv1alpha1.ConditionReady + ".reason", Value: str(reason)},
			{Name: hostfleetv1alpha1.ConditionReady + ".message", Value: str(message)},
			{Name: hostfleetv1alpha1.ConditionAssociated + ".status", Value: str(associated)},
			{Name: hostfleetv1alpha1.ConditionAssociated + ".reason", Value: str(reason)},
			{Name: feedbackHostName, Value: str(host)},
		}
		cond := func(t string, on bool) metav1.Condition {
			s := metav1.ConditionFalse
			if on {
				s = metav1.ConditionTrue
			}
			return metav1.Condition{Type: t, Status: s}
		}
		w := &workv1.ManifestWork{}
		w.Status.Conditions = []metav1.Condition{cond(workv1.WorkApplied, applied)}
		w.Status.ResourceStatus.Manifests = []workv1.ManifestCondition{{
			ResourceMeta:    workv1.ManifestResourceMeta{Group: metal3api.GroupVersion.Group, Resource: "hostclaims"},
			Conditions:      []metav1.Condition{cond(workv1.ManifestApplied, applied), cond("StatusFeedbackSynced", synced)},
			StatusFeedbacks: workv1.StatusFeedbackResult{Values: values}}}
		c := &metal3api.HostClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant-a", Name: "web", UID: "u-1"}}
		SetStatus(c, State{Cluster: "c1", Work: w, ClusterAvailable: true})
		for _, x := range c.Status.Conditions {
			if x.Status != metav1.ConditionTrue && x.Status != metav1.ConditionFalse && x.Status != metav1.ConditionUnknown {
				t.Fatalf("condition %s has status %q", x.Type, x.Status)
			}
			if !conditionReason.MatchString(x.Reason) || len(x.Reason) > 1024 || len(x.Message) > 32768 {
				t.Fatalf("condition %s: reason %q or a %d-byte message the API refuses", x.Type, x.Reason, len(x.Message))
			}
		}
		fb, _ := ReadFeedback(w)
		if isTrue(c.Status.Conditions, hostfleetv1alpha1.ConditionReady) && !fb.Bound() {
			t.Fatalf("Ready True on feedback of a target that is not bound: %+v", fb)
		}
	})
}
