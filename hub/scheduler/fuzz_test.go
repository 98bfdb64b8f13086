package scheduler

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"

	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
)

// FuzzPlace: whatever the inventories and the claim say, Place chooses one
// of the candidate clusters that is not excluded, with free matching hosts
// left after its pending claims (or, for a remote claim, one with no
// inventory), and otherwise says why with a reason.
func FuzzPlace(f *testing.F) {
	f.Add(uint64(1), "example.com/gpu=yes", "gpu", uint8(3), false)
	f.Add(uint64(2), "example.com/size", "", uint8(0), true)
	f.Add(uint64(3), "bad key!=x", "a,,b", uint8(9), false)
	f.Fuzz(func(t *testing.T, seed uint64, want, tolerations string, clusters uint8, remote bool) {
		r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
		c := claim(func(c *metal3api.HostClaim) {
			c.Annotations = map[string]string{hostfleetv1alpha1.AnnotationTolerations: tolerations}
			if k, v, ok := strings.Cut(want, "="); ok {
				c.Spec.HostSelector.MatchLabels = map[string]string{k: v}
			} else if want != "" {
				c.Spec.HostSelector.MatchExpressions = []metal3api.HostSelectorRequirement{{Key: want, Operator: "Exists"}}
			}
		})
		in := Input{Claim: c, Inventories: map[string]*hostfleetv1alpha1.HostInventory{}, Pending: map[string][]*metal3api.HostClaim{},
			Exclude: map[string]bool{}, Prefixes: []string{"example.com"}, Remote: remote}
		for i := range int(clusters % 16) {
			name := fmt.Sprintf("c%d", i)
			in.Clusters = append(in.Clusters, name)
			switch r.IntN(5) {
			case 0:
				continue // no inventory
			case 1:
				in.Exclude[name] = true
			}
			var pools []hostfleetv1alpha1.HostPool
			for range r.IntN(4) {
				p := pool(int32(r.IntN(4)), "", map[string]string{"example.com/gpu": []string{"yes", "no"}[r.IntN(2)]})
				if r.IntN(3) == 0 {
					p.Taints = []string{tolerations}
				}
				pools = append(pools, p)
			}
			in.Inventories[name] = inv(pools...)
			in.Pending[name] = claims(r.IntN(3), nil)
		}
		res := Place(in)
		if res.Cluster == "" {
			if res.Reason == "" || res.Message == "" {
				t.Fatalf("not placed, without a reason or message: %+v", res)
			}
			return
		}
		if res.Reason != "" || !slices.Contains(in.Clusters, res.Cluster) || in.Exclude[res.Cluster] {
			t.Fatalf("placed on %s: reason %q, candidates %v, excluded %v", res.Cluster, res.Reason, in.Clusters, in.Exclude)
		}
		inventory := in.Inventories[res.Cluster]
		if inventory == nil {
			if !remote {
				t.Fatalf("a claim that is not remote placed on %s, which has no inventory", res.Cluster)
			}
			return
		}
		sel, err := selector(c.Spec.HostSelector, in.Prefixes)
		if err != nil {
			t.Fatalf("placed with a selector that does not compile: %v", err)
		}
		free, pending := freeHosts(in, sel, res.Cluster, inventory)
		if free-pending <= 0 || res.Free != free-pending {
			t.Fatalf("placed on %s with %d free after %d pending, said %d", res.Cluster, free, pending, res.Free)
		}
	})
}
