package kubectl_test

import (
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
	hfkubectl "github.com/hostfleet/hostfleet/hub/kubectl"
)

// TestClustersSayHeldHosts: a pool with hosts the release gate holds, or
// hosts not as their baselines want, says how many, beside what is
// available; one with none says nothing of it.
func TestClustersSayHeldHosts(t *testing.T) {
	g := NewWithT(t)
	inv := hostfleetv1alpha1.HostInventory{ObjectMeta: metav1.ObjectMeta{Namespace: "infra-3", Name: "infra-3"},
		Spec: hostfleetv1alpha1.HostInventorySpec{ClusterName: "infra-3"},
		Status: hostfleetv1alpha1.HostInventoryStatus{Total: 5, Available: 2, Held: 1, Pools: []hostfleetv1alpha1.HostPool{
			{Labels: map[string]string{"example.com/size": "medium"}, Total: 3, Available: 1, Held: 1,
				Firmware: &hostfleetv1alpha1.FirmwareStanding{Current: 1, Drifted: 1}},
			{Labels: map[string]string{"example.com/size": "xl"}, Total: 2, Available: 1, Firmware: &hostfleetv1alpha1.FirmwareStanding{Current: 2}}}}}
	lines := hfkubectl.Clusters([]hostfleetv1alpha1.HostInventory{inv}, nil, nil)
	g.Expect(lines).To(HaveLen(1))
	g.Expect(lines[0].Pools).To(Equal([]string{"example.com/size=medium: 1/3, 1 held, 1 drifted", "example.com/size=xl: 1/2"}))
}
