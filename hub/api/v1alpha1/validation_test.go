package v1alpha1_test

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/hostfleet/hostfleet/e2e/harness/planes"
	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
	"github.com/hostfleet/hostfleet/manifests"
)

// TestValidation exercises the CRDs' schema and CEL rules on a real API server.
func TestValidation(t *testing.T) {
	ctx := context.Background()
	f, err := planes.Start(ctx, planes.Options{Dir: t.TempDir(), CRDSets: []string{manifests.Hostfleet}}, "hub")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.Stop() })
	c := f.Plane("hub").Client

	tenant := func(name string, mut func(*hostfleetv1alpha1.TenantSpec)) *hostfleetv1alpha1.Tenant {
		tn := &hostfleetv1alpha1.Tenant{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: hostfleetv1alpha1.TenantSpec{ClusterSet: "lab"}}
		mut(&tn.Spec)
		return tn
	}
	tests := []struct {
		name    string
		obj     *hostfleetv1alpha1.Tenant
		wantErr string
	}{
		{name: "minimal", obj: tenant("a", func(*hostfleetv1alpha1.TenantSpec) {})},
		{name: "allowed prefixes", obj: tenant("b", func(s *hostfleetv1alpha1.TenantSpec) {
			s.LabelSyncPrefixes = []string{"example.com", "topology.kubernetes.io", "my.kubernetes.io"}
		})},
		{name: "kubernetes.io is reserved", obj: tenant("c", func(s *hostfleetv1alpha1.TenantSpec) {
			s.LabelSyncPrefixes = []string{"example.com", "kubernetes.io"}
		}), wantErr: "reserved for Kubernetes"},
		{name: "kubelet.kubernetes.io is reserved", obj: tenant("d", func(s *hostfleetv1alpha1.TenantSpec) {
			s.LabelSyncPrefixes = []string{"kubelet.kubernetes.io"}
		}), wantErr: "reserved for Kubernetes"},
		{name: "node-role.kubernetes.io steers Nodes", obj: tenant("j", func(s *hostfleetv1alpha1.TenantSpec) {
			s.LabelSyncPrefixes = []string{"node-role.kubernetes.io"}
		}), wantErr: "steer Nodes"},
		{name: "node-restriction.kubernetes.io steers Nodes", obj: tenant("k", func(s *hostfleetv1alpha1.TenantSpec) {
			s.LabelSyncPrefixes = []string{"example.com", "node-restriction.kubernetes.io"}
		}), wantErr: "NodeRestriction admission plugin"},
		{name: "node.kubernetes.io steers Nodes", obj: tenant("l", func(s *hostfleetv1alpha1.TenantSpec) {
			s.LabelSyncPrefixes = []string{"node.kubernetes.io"}
		}), wantErr: "steer Nodes"},
		{name: "and so do their sub-domains", obj: tenant("m", func(s *hostfleetv1alpha1.TenantSpec) {
			s.LabelSyncPrefixes = []string{"x.node-role.kubernetes.io"}
		}), wantErr: "steer Nodes"},
		{name: "a look-alike outside them is allowed", obj: tenant("n", func(s *hostfleetv1alpha1.TenantSpec) {
			s.LabelSyncPrefixes = []string{"mynode.kubernetes.io", "node.example.com"}
		})},
		{name: "hostfleet.io is refused", obj: tenant("i", func(s *hostfleetv1alpha1.TenantSpec) {
			s.LabelSyncPrefixes = []string{"sub.hostfleet.io"}
		}), wantErr: "Hostfleet's own labels"},
		{name: "a prefix is a DNS subdomain", obj: tenant("e", func(s *hostfleetv1alpha1.TenantSpec) {
			s.LabelSyncPrefixes = []string{"Example.com/x"}
		}), wantErr: "labelSyncPrefixes[0]"},
		{name: "clusterSet is required", obj: tenant("f", func(s *hostfleetv1alpha1.TenantSpec) { s.ClusterSet = "" }),
			wantErr: "spec.clusterSet"},
		{name: "negative maxClaims", obj: tenant("g", func(s *hostfleetv1alpha1.TenantSpec) { s.MaxClaims = ptr.To[int32](-1) }),
			wantErr: "spec.maxClaims"},
		{name: "bad namespace name", obj: tenant("h", func(s *hostfleetv1alpha1.TenantSpec) { s.Namespaces = []string{"Tenant_A"} }),
			wantErr: "spec.namespaces[0]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			err := c.Create(ctx, tt.obj)
			if tt.wantErr == "" {
				g.Expect(err).NotTo(HaveOccurred())
				return
			}
			g.Expect(err).To(MatchError(ContainSubstring(tt.wantErr)))
		})
	}

	t.Run("inventory clusterName is immutable", func(t *testing.T) {
		g := NewWithT(t)
		inv := &hostfleetv1alpha1.HostInventory{
			ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "infra-1"},
			Spec:       hostfleetv1alpha1.HostInventorySpec{ClusterName: "infra-1"},
		}
		g.Expect(c.Create(ctx, inv)).To(Succeed())
		inv.Spec.ClusterName = "infra-2"
		g.Expect(c.Update(ctx, inv)).To(MatchError(ContainSubstring("clusterName is immutable")))
	})

	t.Run("default namespaces", func(t *testing.T) {
		g := NewWithT(t)
		g.Expect(tenant("z", func(*hostfleetv1alpha1.TenantSpec) {}).DefaultNamespaces()).To(Equal([]string{"tenant-z"}))
		g.Expect(tenant("z", func(s *hostfleetv1alpha1.TenantSpec) { s.Namespaces = []string{"x"} }).DefaultNamespaces()).To(Equal([]string{"x"}))
	})
}
