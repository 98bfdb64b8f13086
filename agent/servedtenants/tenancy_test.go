package servedtenants

import (
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
)

func TestNamespaceLabels(t *testing.T) {
	ct := &hostfleetv1alpha1.ClusterTenancy{Spec: hostfleetv1alpha1.ClusterTenancySpec{
		Tenants: []hostfleetv1alpha1.ServedTenant{
			{Name: "a", Namespaces: []string{"a1", "a2", "a3"}, NamespaceLabels: []hostfleetv1alpha1.NamespaceLabels{
				{Name: "a1", Labels: map[string]string{"rack": "r1"}}, {Name: "a3"}}},
			// Written by an earlier hub: no labels.
			{Name: "b", Namespaces: []string{"b1"}},
		},
		WorkloadTenants: []hostfleetv1alpha1.ServedTenant{{Name: "w", Namespaces: []string{"w1"}}},
	}}
	for _, tc := range []struct {
		ns     string
		labels map[string]string
		ok     bool
	}{
		{"a1", map[string]string{"rack": "r1"}, true},
		{"a2", map[string]string{corev1.LabelMetadataName: "a2", hostfleetv1alpha1.LabelTenant: "a"}, true},
		// Listed before the hub's cache had the namespace: no labels.
		{"a3", map[string]string{corev1.LabelMetadataName: "a3", hostfleetv1alpha1.LabelTenant: "a"}, true},
		{"b1", map[string]string{corev1.LabelMetadataName: "b1", hostfleetv1alpha1.LabelTenant: "b"}, true},
		{"w1", nil, false}, // a workload tenant's: nothing is bound there
		{"other", nil, false},
	} {
		t.Run(tc.ns, func(t *testing.T) {
			g := NewWithT(t)
			labels, ok := NamespaceLabels(ct, tc.ns)
			g.Expect(ok).To(Equal(tc.ok))
			g.Expect(labels).To(Equal(tc.labels))
		})
	}
	g := NewWithT(t)
	g.Expect(Namespaces(ct)).To(Equal([]corev1.Namespace{
		{ObjectMeta: metav1.ObjectMeta{Name: "a1", Labels: map[string]string{"rack": "r1"}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "a2", Labels: map[string]string{corev1.LabelMetadataName: "a2", hostfleetv1alpha1.LabelTenant: "a"}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "a3", Labels: map[string]string{corev1.LabelMetadataName: "a3", hostfleetv1alpha1.LabelTenant: "a"}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "b1", Labels: map[string]string{corev1.LabelMetadataName: "b1", hostfleetv1alpha1.LabelTenant: "b"}}},
	}))
	g.Expect(Namespaces(nil)).To(BeEmpty())
}
