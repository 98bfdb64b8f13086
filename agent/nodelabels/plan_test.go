package nodelabels_test

import (
	"testing"

	. "github.com/onsi/gomega"

	"github.com/hostfleet/hostfleet/agent/nodelabels"
	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
)

func TestWanted(t *testing.T) {
	g := NewWithT(t)
	g.Expect(nodelabels.Wanted(map[string]string{"rack.example.com/rack": "r1", "zone.example.com/z": "a", "other/x": "y",
		hostfleetv1alpha1.LabelCluster: "infra-1"}, []string{"rack.example.com"})).To(Equal(map[string]string{"rack.example.com/rack": "r1"}))
}

func TestPlanNode(t *testing.T) {
	prefixes := []string{"rack.example.com"}
	for _, tc := range []struct {
		name        string
		node        map[string]string
		owned       []string
		wanted      map[string]string
		apply       map[string]string
		remove      []string
		nothingToDo bool
	}{{
		name:   "first sync: added, foreign labels untouched",
		node:   map[string]string{"kubernetes.io/hostname": "n1", "team": "a"},
		wanted: map[string]string{"rack.example.com/rack": "r1"},
		apply:  map[string]string{"rack.example.com/rack": "r1"},
	}, {
		name:        "in sync",
		node:        map[string]string{"rack.example.com/rack": "r1", "team": "a"},
		owned:       []string{"rack.example.com/rack"},
		wanted:      map[string]string{"rack.example.com/rack": "r1"},
		nothingToDo: true,
	}, {
		name:   "changed on the host",
		node:   map[string]string{"rack.example.com/rack": "r1"},
		owned:  []string{"rack.example.com/rack"},
		wanted: map[string]string{"rack.example.com/rack": "r2"},
		apply:  map[string]string{"rack.example.com/rack": "r2"},
	}, {
		name:   "removed on the host: applied without it",
		node:   map[string]string{"rack.example.com/rack": "r1", "rack.example.com/row": "7"},
		owned:  []string{"rack.example.com/rack", "rack.example.com/row"},
		wanted: map[string]string{"rack.example.com/rack": "r1"},
		apply:  map[string]string{"rack.example.com/rack": "r1"},
	}, {
		name:   "deleted on the Node by hand: restored",
		node:   map[string]string{},
		wanted: map[string]string{"rack.example.com/rack": "r1"},
		apply:  map[string]string{"rack.example.com/rack": "r1"},
	}, {
		name:   "edited on the Node by hand (ownership moved): taken back",
		node:   map[string]string{"rack.example.com/rack": "mine"},
		wanted: map[string]string{"rack.example.com/rack": "r1"},
		apply:  map[string]string{"rack.example.com/rack": "r1"},
	}, {
		name:   "added on the Node by hand under a prefix: removed",
		node:   map[string]string{"rack.example.com/rack": "r1", "rack.example.com/fake": "x"},
		owned:  []string{"rack.example.com/rack"},
		wanted: map[string]string{"rack.example.com/rack": "r1"},
		remove: []string{"rack.example.com/fake"},
	}, {
		name:        "a prefix removed from the Tenant: its labels left as the Node has them",
		node:        map[string]string{"rack.example.com/rack": "r1", "old.example.com/zone": "edited"},
		owned:       []string{"rack.example.com/rack", "old.example.com/zone"},
		wanted:      map[string]string{"rack.example.com/rack": "r1"},
		nothingToDo: true,
	}, {
		name:   "the pending gate goes once the labels are there",
		node:   map[string]string{hostfleetv1alpha1.LabelLabelsPending: "", "rack.example.com/rack": "r1"},
		owned:  []string{"rack.example.com/rack"},
		wanted: map[string]string{"rack.example.com/rack": "r1"},
		remove: []string{hostfleetv1alpha1.LabelLabelsPending},
	}, {
		name:   "nothing wanted any more: applied empty",
		node:   map[string]string{"rack.example.com/rack": "r1"},
		owned:  []string{"rack.example.com/rack"},
		wanted: map[string]string{},
		apply:  map[string]string{},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			p := nodelabels.PlanNode(tc.node, tc.owned, tc.wanted, prefixes)
			g.Expect(p.Empty()).To(Equal(tc.nothingToDo))
			if tc.apply == nil {
				g.Expect(p.Apply).To(BeNil())
			} else {
				g.Expect(p.Apply).To(Equal(tc.apply))
			}
			g.Expect(p.Remove).To(Equal(tc.remove))
		})
	}
}
