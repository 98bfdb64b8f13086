package taints

import (
	"testing"

	. "github.com/onsi/gomega"

	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
		err  bool
	}{
		{in: "", want: nil},
		{in: "gpu", want: []string{"gpu"}},
		{in: " b , a,b,, example.com/reserved", want: []string{"a", "b", "example.com/reserved"}},
		{in: "not a key", err: true},
		{in: "a,-b", err: true},
	} {
		t.Run(tc.in, func(t *testing.T) {
			g := NewWithT(t)
			got, err := Parse(tc.in)
			if tc.err {
				g.Expect(err).To(HaveOccurred())
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got).To(Equal(tc.want))
		})
	}
}

func TestTolerated(t *testing.T) {
	tol := func(v string) map[string]string { return map[string]string{hostfleetv1alpha1.AnnotationTolerations: v} }
	for _, tc := range []struct {
		name   string
		claim  map[string]string
		host   map[string]string
		expect bool
	}{
		{name: "untainted host, any claim", claim: nil, host: nil, expect: true},
		{name: "tainted host, claim without tolerations", claim: nil, host: map[string]string{hostfleetv1alpha1.AnnotationTaints: "gpu"}, expect: false},
		{name: "tolerates the taint", claim: tol("gpu"), host: map[string]string{hostfleetv1alpha1.AnnotationTaints: "gpu"}, expect: true},
		{name: "tolerates one of two", claim: tol("gpu"), host: map[string]string{hostfleetv1alpha1.AnnotationTaints: "gpu,reserved"}, expect: false},
		{name: "tolerates both, in any order", claim: tol("reserved, gpu"), host: map[string]string{hostfleetv1alpha1.AnnotationTaints: "gpu,reserved"}, expect: true},
		{name: "bad host taint placed for nobody", claim: tol("x y"), host: map[string]string{hostfleetv1alpha1.AnnotationTaints: "x y"}, expect: false},
		{name: "bad tolerations tolerate nothing", claim: tol("gpu,not ok"), host: map[string]string{hostfleetv1alpha1.AnnotationTaints: "gpu"}, expect: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			NewWithT(t).Expect(Tolerated(tc.claim, Of(tc.host))).To(Equal(tc.expect))
		})
	}
}
