package planes_test

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hostfleet/hostfleet/e2e/harness/planes"
)

// TestSharedPlanes: a package's tests share each plane name once. A test
// asking for a plane the idle fleet lacks gets it added to that fleet, the
// others reused; and a test after one that left an admission policy whose
// binding names parameters is never refused by it: the reset removes the
// binding, and the API server serves it removed, before the parameters go.
func TestSharedPlanes(t *testing.T) {
	ctx := context.Background()
	var hub string
	t.Run("leaves a policy bound to parameters", func(t *testing.T) {
		g := NewWithT(t)
		f := planes.ForTest(t, "pool-hub")
		hub = f.Plane("pool-hub").Config.Host
		c := f.Plane("pool-hub").Client
		params := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "limits"}, Data: map[string]string{"max": "3"}}
		g.Expect(c.Create(ctx, params)).To(Succeed())
		policy := &admissionregistrationv1.ValidatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: "config-limits"},
			Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
				FailurePolicy: ptr.To(admissionregistrationv1.Fail),
				ParamKind:     &admissionregistrationv1.ParamKind{APIVersion: "v1", Kind: "ConfigMap"},
				MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
					RuleWithOperations: admissionregistrationv1.RuleWithOperations{Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
						Rule: admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}}}}}},
				Validations: []admissionregistrationv1.Validation{{Expression: "size(object.data) <= int(params.data.max)"}},
			}}
		binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: "config-limits"},
			Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: policy.Name,
				ParamRef: &admissionregistrationv1.ParamRef{Name: params.Name, Namespace: params.Namespace,
					ParameterNotFoundAction: ptr.To(admissionregistrationv1.DenyAction)},
				ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny}}}
		g.Expect(c.Create(ctx, policy)).To(Succeed())
		g.Expect(c.Create(ctx, binding)).To(Succeed())
		tooBig := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", GenerateName: "big-"},
			Data: map[string]string{"a": "", "b": "", "c": "", "d": ""}}
		g.Eventually(func() error { return c.Create(ctx, tooBig.DeepCopy()) }, "30s", "100ms").
			Should(MatchError(ContainSubstring("config-limits")), "the policy is in force")
	})
	t.Run("a plane added, the policy gone", func(t *testing.T) {
		g := NewWithT(t)
		f := planes.ForTest(t, "pool-hub", "pool-infra")
		g.Expect(f.Names()).To(Equal([]string{"pool-hub", "pool-infra"}))
		g.Expect(f.Plane("pool-hub").Config.Host).To(Equal(hub), "the hub plane is the one started before")
		c := f.Plane("pool-hub").Client
		// At once: no wait for the API server to forget the policy.
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "after"}, Data: map[string]string{"a": "", "b": "", "c": "", "d": ""}}
		g.Expect(c.Create(ctx, cm)).To(Succeed())
		var bindings admissionregistrationv1.ValidatingAdmissionPolicyBindingList
		g.Expect(c.List(ctx, &bindings)).To(Succeed())
		g.Expect(bindings.Items).To(BeEmpty())
		g.Expect(f.Plane("pool-infra").Client.List(ctx, &corev1.NamespaceList{}, client.Limit(1))).To(Succeed())
	})
}
