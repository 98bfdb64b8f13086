package scheduler

import (
	"fmt"
	"testing"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
)

func inv(pools ...hostfleetv1alpha1.HostPool) *hostfleetv1alpha1.HostInventory {
	return &hostfleetv1alpha1.HostInventory{Status: hostfleetv1alpha1.HostInventoryStatus{Pools: pools}}
}

func pool(available int32, fd string, lbls map[string]string, nss ...string) hostfleetv1alpha1.HostPool {
	if nss == nil {
		nss = []string{"tenant-a"}
	}
	return hostfleetv1alpha1.HostPool{Labels: lbls, FailureDomain: fd, Namespaces: nss, Total: available, Available: available}
}

func tainted(p hostfleetv1alpha1.HostPool, taints ...string) hostfleetv1alpha1.HostPool {
	p.Taints = taints
	return p
}

func claim(mut ...func(*metal3api.HostClaim)) *metal3api.HostClaim {
	c := &metal3api.HostClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant-a", Name: "c", UID: "u1"}}
	for _, m := range mut {
		m(c)
	}
	return c
}

func claims(n int, mut func(*metal3api.HostClaim)) []*metal3api.HostClaim {
	out := make([]*metal3api.HostClaim, n)
	for i := range out {
		out[i] = claim()
		if mut != nil {
			mut(out[i])
		}
	}
	return out
}

func TestPlace(t *testing.T) {
	gpu := map[string]string{"example.com/gpu": "yes"}
	tests := []struct {
		name     string
		in       Input
		want     string
		contains string
	}{
		{name: "the cluster with free matching hosts",
			in: Input{Claim: claim(func(c *metal3api.HostClaim) { c.Spec.HostSelector.MatchLabels = gpu }), Clusters: []string{"a", "b"},
				Inventories: map[string]*hostfleetv1alpha1.HostInventory{"a": inv(pool(3, "", nil)), "b": inv(pool(1, "", gpu))}, Prefixes: []string{"example.com"}},
			want: "b"},
		{name: "most free hosts wins",
			in: Input{Claim: claim(), Clusters: []string{"a", "b"},
				Inventories: map[string]*hostfleetv1alpha1.HostInventory{"a": inv(pool(2, "", nil)), "b": inv(pool(5, "", nil))}},
			want: "b"},
		{name: "pending claims count against free hosts",
			in: Input{Claim: claim(), Clusters: []string{"a", "b"}, Pending: map[string][]*metal3api.HostClaim{"b": claims(4, nil)},
				Inventories: map[string]*hostfleetv1alpha1.HostInventory{"a": inv(pool(2, "", nil)), "b": inv(pool(5, "", nil))}},
			want: "a"},
		{name: "pending claims for other hosts do not count",
			in: Input{Claim: claim(func(c *metal3api.HostClaim) {
				c.Spec.HostSelector.MatchLabels = map[string]string{"example.com/size": "m"}
			}),
				Clusters: []string{"a"}, Prefixes: []string{"example.com"},
				Pending:     map[string][]*metal3api.HostClaim{"a": claims(3, func(c *metal3api.HostClaim) { c.Spec.HostSelector.MatchLabels = gpu })},
				Inventories: map[string]*hostfleetv1alpha1.HostInventory{"a": inv(pool(3, "", gpu), pool(1, "", map[string]string{"example.com/size": "m"}))}},
			want: "a"},
		{name: "pending claims for the same hosts do",
			in: Input{Claim: claim(func(c *metal3api.HostClaim) { c.Spec.HostSelector.MatchLabels = gpu }),
				Clusters: []string{"a"}, Prefixes: []string{"example.com"},
				Pending:     map[string][]*metal3api.HostClaim{"a": claims(3, nil)},
				Inventories: map[string]*hostfleetv1alpha1.HostInventory{"a": inv(pool(3, "", gpu), pool(1, "", map[string]string{"example.com/size": "m"}))}},
			contains: "a (3 free matching hosts after 3 pending claims)"},
		{name: "pools that do not admit the namespace do not count",
			in: Input{Claim: claim(), Clusters: []string{"a"},
				Inventories: map[string]*hostfleetv1alpha1.HostInventory{"a": inv(pool(9, "", nil, "tenant-b"))}},
			contains: "a (0 free matching hosts after 0 pending claims)"},
		{name: "only the tenant's clusters",
			in: Input{Claim: claim(), Clusters: []string{"a"},
				Inventories: map[string]*hostfleetv1alpha1.HostInventory{"a": inv(pool(0, "", nil)), "z": inv(pool(9, "", nil))}},
			contains: "no cluster has a free host matching (any host) for namespace tenant-a"},
		{name: "an operator a selector cannot have",
			in: Input{Claim: claim(func(c *metal3api.HostClaim) {
				c.Spec.HostSelector.MatchExpressions = []metal3api.HostSelectorRequirement{{Key: "example.com/x", Operator: "Sometimes", Values: []string{"a"}}}
			}), Clusters: []string{"a"}, Prefixes: []string{"example.com"}, Inventories: map[string]*hostfleetv1alpha1.HostInventory{"a": inv(pool(1, "", nil))}},
			contains: "spec.hostSelector is invalid"},
		{name: "no inventory yet",
			in: Input{Claim: claim(), Clusters: []string{"a", "b"},
				Inventories: map[string]*hostfleetv1alpha1.HostInventory{"a": inv(pool(0, "", nil))}},
			contains: "b (no HostInventory yet)"},
		{name: "no inventory from any cluster: waiting for them, not out of hosts",
			in:       Input{Claim: claim(), Clusters: []string{"a", "b"}, Inventories: map[string]*hostfleetv1alpha1.HostInventory{}},
			contains: "waiting for the agents of a, b to publish their HostInventories"},
		{name: "excluded clusters are skipped",
			in: Input{Claim: claim(), Clusters: []string{"a", "b"}, Exclude: map[string]bool{"b": true},
				Inventories: map[string]*hostfleetv1alpha1.HostInventory{"a": inv(pool(1, "", nil)), "b": inv(pool(5, "", nil))}},
			want: "a"},
		{name: "selector keys outside the sync prefixes are left to the agent",
			in: Input{Claim: claim(func(c *metal3api.HostClaim) {
				c.Spec.HostSelector.MatchLabels = map[string]string{"private.org/x": "y"}
			}),
				Clusters: []string{"a"}, Inventories: map[string]*hostfleetv1alpha1.HostInventory{"a": inv(pool(1, "", nil))}, Prefixes: []string{"example.com"}},
			want: "a", contains: "hostSelector keys private.org/x are not published (they are not under the tenant's labelSyncPrefixes), so they could not be checked here"},
		{name: "a failure domain with free hosts is preferred",
			in: Input{Claim: claim(func(c *metal3api.HostClaim) { c.Spec.FailureDomain = "rack-2" }), Clusters: []string{"a", "b"},
				Inventories: map[string]*hostfleetv1alpha1.HostInventory{"a": inv(pool(5, "rack-1", nil)), "b": inv(pool(1, "rack-2", nil), pool(1, "", nil))}},
			want: "a"},
		{name: "matchExpressions in any case",
			in: Input{Claim: claim(func(c *metal3api.HostClaim) {
				c.Spec.HostSelector.MatchExpressions = []metal3api.HostSelectorRequirement{{Key: "example.com/size", Operator: "In", Values: []string{"l"}}}
			}), Clusters: []string{"a", "b"}, Prefixes: []string{"example.com"},
				Inventories: map[string]*hostfleetv1alpha1.HostInventory{"a": inv(pool(4, "", map[string]string{"example.com/size": "s"})), "b": inv(pool(1, "", map[string]string{"example.com/size": "l"}))}},
			want: "b"},
		{name: "a tainted pool only for a claim that tolerates it",
			in: Input{Claim: claim(func(c *metal3api.HostClaim) {
				c.Annotations = map[string]string{hostfleetv1alpha1.AnnotationTolerations: "gpu"}
			}),
				Clusters:    []string{"a", "b"},
				Inventories: map[string]*hostfleetv1alpha1.HostInventory{"a": inv(pool(1, "", nil)), "b": inv(tainted(pool(3, "", nil), "gpu"))}},
			want: "b"},
		{name: "a tainted pool is no place for a claim that does not tolerate it",
			in: Input{Claim: claim(), Clusters: []string{"b"},
				Inventories: map[string]*hostfleetv1alpha1.HostInventory{"b": inv(tainted(pool(3, "", nil), "gpu"))}},
			contains: "b (0 free matching hosts after 0 pending claims)"},
		{name: "no clusters at all",
			in:       Input{Claim: claim()},
			contains: "the tenant's cluster set (and Placement, if any) has no clusters"},
		{name: "a fleet of full clusters is named in short",
			in: func() Input {
				in := Input{Claim: claim(), Inventories: map[string]*hostfleetv1alpha1.HostInventory{}}
				for i := range 12 {
					name := fmt.Sprintf("c%02d", i)
					in.Clusters, in.Inventories[name] = append(in.Clusters, name), inv(pool(0, "", nil))
				}
				return in
			}(),
			contains: "c04 (0 free matching hosts after 0 pending claims) and 7 more; the claim is placed as soon as one has"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			r := Place(tt.in)
			g.Expect(r.Cluster).To(Equal(tt.want), r.Message)
			g.Expect(r.Message).To(ContainSubstring(tt.contains))
		})
	}
}

func TestTiesSpreadDeterministically(t *testing.T) {
	g := NewWithT(t)
	invs := map[string]*hostfleetv1alpha1.HostInventory{}
	var clusters []string
	for i := 0; i < 5; i++ {
		name := fmt.Sprintf("c%d", i)
		clusters = append(clusters, name)
		invs[name] = inv(pool(3, "", nil))
	}
	got := map[string]int{}
	for i := 0; i < 100; i++ {
		c := claim(func(c *metal3api.HostClaim) { c.UID = types.UID(fmt.Sprintf("uid-%d", i)) })
		r := Place(Input{Claim: c, Clusters: clusters, Inventories: invs})
		g.Expect(Place(Input{Claim: c, Clusters: clusters, Inventories: invs}).Cluster).To(Equal(r.Cluster))
		got[r.Cluster]++
	}
	g.Expect(got).To(HaveLen(5), "100 claims over 5 equal clusters use them all: %v", got)
}

// TestPlaceRemote: a remote claim goes where an inventory shows a free
// matching host; a cluster without an inventory (no Hostfleet agent, its own
// HostClaim controller) is used only when none has; an inventory without a
// match rules its cluster out.
func TestPlaceRemote(t *testing.T) {
	g := NewWithT(t)
	gpu := map[string]string{"example.com/gpu": "yes"}
	remote := claim(func(c *metal3api.HostClaim) { c.Spec.HostSelector.MatchLabels = gpu })
	in := Input{Claim: remote, Remote: true, Clusters: []string{"bare", "full", "inv"}, Prefixes: []string{"example.com"},
		Inventories: map[string]*hostfleetv1alpha1.HostInventory{"inv": inv(pool(1, "", gpu)), "full": inv(pool(3, "", nil))}}
	res := Place(in)
	g.Expect(res.Cluster).To(Equal("inv"))

	in.Clusters = []string{"bare", "full"}
	res = Place(in)
	g.Expect(res.Cluster).To(Equal("bare"), "only the cluster without an inventory is left: full has no gpu host")
	g.Expect(res.Message).To(ContainSubstring("publishes no HostInventory"))
	g.Expect(res.Message).To(ContainSubstring("full (0 free matching hosts"))

	in.Remote = false
	res = Place(in)
	g.Expect(res.Cluster).To(BeEmpty(), "a pull-path claim never goes where no agent serves it")
	g.Expect(res.Reason).To(Equal(hostfleetv1alpha1.ReasonNoCapacity))
}
