package labelsync

import (
	"strings"
	"testing"

	. "github.com/onsi/gomega"

	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
)

func TestValidPrefix(t *testing.T) {
	for p, ok := range map[string]bool{
		"example.com": true, "topology.kubernetes.io": true, "my.kubernetes.io": true, "hostfleet.example.com": true,
		"kubernetes.io": false, "k8s.io": false, "kubelet.kubernetes.io": false, "beta.kubernetes.io": false, "sub.hostfleet.io": false,
		"Bad_Prefix": false, "": false, "hostfleet.io": false, "x.hostfleet.io": false,
		"node-role.kubernetes.io": false, "node-restriction.kubernetes.io": false, "node.kubernetes.io": false,
		"a.node.kubernetes.io": false, "mynode.kubernetes.io": true, "node.example.com": true,
	} {
		err := ValidPrefix(p)
		NewWithT(t).Expect(err == nil).To(Equal(ok), "%q: %v", p, err)
	}
	valid, refused := Prefixes([]string{"example.com", "kubernetes.io"})
	NewWithT(t).Expect(valid).To(Equal([]string{"example.com"}))
	NewWithT(t).Expect(refused).To(HaveLen(1))
}

func TestDesired(t *testing.T) {
	prefixes := []string{"example.com", "topology.kubernetes.io"}
	tests := []struct {
		name      string
		claim     map[string]string
		host      map[string]string
		prefixes  []string
		boundHost string
		want      map[string]string
	}{
		{
			name:  "adds and changes prefixed host labels, keeps claim labels outside the prefixes",
			claim: map[string]string{"app": "web", "example.com/rack": "old", hostfleetv1alpha1.LabelCluster: "infra-1"},
			host: map[string]string{"example.com/rack": "r2", "topology.kubernetes.io/zone": "z1",
				"other.org/secret": "x", "kubernetes.io/hostname": "h", "noprefix": "y"},
			prefixes: prefixes, boundHost: "h0",
			want: map[string]string{"app": "web", hostfleetv1alpha1.LabelCluster: "infra-1", "example.com/rack": "r2",
				"topology.kubernetes.io/zone": "z1", hostfleetv1alpha1.LabelBoundHost: "h0"},
		},
		{
			name:     "removes prefixed claim labels the host no longer has",
			claim:    map[string]string{"example.com/gpu": "yes", "example.com/rack": "r1", "app": "web"},
			host:     map[string]string{"example.com/rack": "r1"},
			prefixes: prefixes,
			want:     map[string]string{"example.com/rack": "r1", "app": "web"},
		},
		{
			name:     "a forged bound-host label is replaced by the truth",
			claim:    map[string]string{hostfleetv1alpha1.LabelBoundHost: "someone-elses-host"},
			prefixes: nil, boundHost: "h0",
			want: map[string]string{hostfleetv1alpha1.LabelBoundHost: "h0"},
		},
		{
			name:     "a bound-host label on an unbound claim is erased",
			claim:    map[string]string{hostfleetv1alpha1.LabelBoundHost: "h9", "app": "x"},
			prefixes: nil,
			want:     map[string]string{"app": "x"},
		},
		{
			name:     "no prefixes: nothing mirrored",
			claim:    map[string]string{"example.com/rack": "mine"},
			host:     map[string]string{"example.com/rack": "r1"},
			prefixes: nil,
			want:     map[string]string{"example.com/rack": "mine"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			NewWithT(t).Expect(Desired(tt.claim, tt.host, tt.prefixes, tt.boundHost)).To(Equal(tt.want))
		})
	}
}

func TestBoundHostValue(t *testing.T) {
	g := NewWithT(t)
	g.Expect(BoundHostValue("worker-0")).To(Equal("worker-0"))
	g.Expect(BoundHostValue(strings.Repeat("a", 64))).To(BeEmpty())
}
