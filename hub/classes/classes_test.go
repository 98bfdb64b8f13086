package classes_test

import (
	"testing"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"

	"github.com/hostfleet/hostfleet/hub/api/hardware"
	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
	"github.com/hostfleet/hostfleet/hub/classes"
)

var prefixes = []string{"example.com"}

func claim(sel map[string]string, mut func(*metal3api.HostClaim)) *metal3api.HostClaim {
	c := &metal3api.HostClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant-a", Name: "c", UID: "u"},
		Spec: metal3api.HostClaimSpec{HostSelector: metal3api.HostSelector{MatchLabels: sel}}}
	if mut != nil {
		mut(c)
	}
	return c
}

func bound(host map[string]string) func(*metal3api.HostClaim) {
	return func(c *metal3api.HostClaim) {
		c.Labels = map[string]string{hostfleetv1alpha1.LabelCluster: "c1"}
		for k, v := range host {
			c.Labels[k] = v
		}
		c.Status.BareMetalHost = &metal3api.ObjectReference{Namespace: "hosts", Name: "h0"}
	}
}

func TestLabels(t *testing.T) {
	for _, tt := range []struct {
		name string
		c    *metal3api.HostClaim
		want labels.Set
	}{
		{"unbound: what the selector asks for", claim(map[string]string{"example.com/gpu": "yes"}, func(c *metal3api.HostClaim) {
			c.Spec.HostSelector.MatchExpressions = []metal3api.HostSelectorRequirement{
				{Key: "example.com/size", Operator: selection.In, Values: []string{"large"}},
				{Key: "example.com/rack", Operator: selection.In, Values: []string{"r1", "r2"}},
				{Key: "example.com/old", Operator: selection.DoesNotExist}}
		}), labels.Set{"example.com/gpu": "yes", "example.com/size": "large"}},
		{"bound: its host's labels under the prefixes over the selector's", claim(map[string]string{"example.com/gpu": "yes"},
			bound(map[string]string{"example.com/size": "large", "other.org/team": "x"})), labels.Set{"example.com/gpu": "yes", "example.com/size": "large"}},
		{"bound remote claim (no labels synced): its selector's", claim(map[string]string{"example.com/size": "large"},
			bound(nil)), labels.Set{"example.com/size": "large"}},
		{"nothing asked, nothing bound", claim(nil, nil), labels.Set{}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			NewWithT(t).Expect(classes.Labels(tt.c, prefixes)).To(Equal(tt.want))
		})
	}
}

func TestDecide(t *testing.T) {
	g := NewWithT(t)
	tenant := &hostfleetv1alpha1.Tenant{ObjectMeta: metav1.ObjectMeta{Name: "a"}, Spec: hostfleetv1alpha1.TenantSpec{Quotas: []hostfleetv1alpha1.ClassQuota{
		{Name: "gpu", MaxClaims: 1, HostSelector: hostfleetv1alpha1.ClassSelector{MatchLabels: map[string]string{"example.com/gpu": "yes"}}},
		{Name: "big", MaxClaims: 2, HostSelector: hostfleetv1alpha1.ClassSelector{MatchExpressions: []hostfleetv1alpha1.ClassRequirement{
			{Key: "example.com/size", Operator: metav1.LabelSelectorOpIn, Values: []string{"large", "xlarge"}}}}},
	}}}
	cls, err := classes.Of(tenant)
	g.Expect(err).NotTo(HaveOccurred())
	gpu := map[string]string{"example.com/gpu": "yes"}
	held := []*metal3api.HostClaim{
		claim(gpu, bound(map[string]string{"example.com/size": "large"})),
		claim(map[string]string{"example.com/size": "xlarge"}, nil),
	}
	counts := classes.Counts(cls, held, prefixes, classes.Fleet{})
	g.Expect(counts).To(Equal(map[string]int32{"gpu": 1, "big": 2}), "a claim counts in every class it matches")
	g.Expect(classes.Usage(cls, counts)).To(Equal([]hostfleetv1alpha1.ClassUsage{{Name: "gpu", Claims: 1, MaxClaims: 1}, {Name: "big", Claims: 2, MaxClaims: 2}}))

	v := classes.Decide(cls, counts, claim(gpu, nil), prefixes, classes.Fleet{})
	g.Expect(v.Held).To(Equal([]string{"gpu"}))
	g.Expect(v.Message).To(ContainSubstring("class gpu holds 1 of its 1 claims"))
	g.Expect(v.Exclude).To(HaveLen(1), "kept off big, full, which it does not ask for")

	v = classes.Decide(cls, counts, claim(nil, nil), prefixes, classes.Fleet{})
	g.Expect(v.Held).To(BeEmpty())
	g.Expect(v.Exclude).To(Equal([]hostfleetv1alpha1.ClassSelector{tenant.Spec.Quotas[0].HostSelector, tenant.Spec.Quotas[1].HostSelector}))

	v = classes.Decide(cls, map[string]int32{"gpu": 0, "big": 1}, claim(map[string]string{"example.com/size": "large"}, nil), prefixes, classes.Fleet{})
	g.Expect(v).To(Equal(classes.Verdict{}), "room in every class: placed anywhere")

	g.Expect(classes.Counted(claim(nil, nil))).To(BeFalse(), "not placed: takes no host")
	pinned := claim(nil, func(c *metal3api.HostClaim) { c.Labels = map[string]string{hostfleetv1alpha1.LabelCluster: "c1"} })
	g.Expect(classes.Counted(pinned)).To(BeFalse(), "a pin the scheduler has not admitted takes no host")
	pinned.Status.Conditions = []metav1.Condition{{Type: hostfleetv1alpha1.ConditionScheduled, Status: metav1.ConditionTrue, Reason: hostfleetv1alpha1.ReasonPinned}}
	g.Expect(classes.Counted(pinned)).To(BeTrue(), "admitted")
	g.Expect(classes.Counted(claim(nil, func(c *metal3api.HostClaim) {
		c.Labels = map[string]string{hostfleetv1alpha1.LabelCluster: "c1"}
		c.Annotations = map[string]string{hostfleetv1alpha1.AnnotationPlacedBy: hostfleetv1alpha1.PlacedByScheduler}
	}))).To(BeTrue(), "placed by the scheduler")

	tenant.Spec.Quotas[0].HostSelector.MatchLabels = map[string]string{"example.com/gpu": "not a value!"}
	_, err = classes.Of(tenant)
	g.Expect(err).To(MatchError(ContainSubstring("class gpu of tenant a")))
}

// TestByHardware: a class by hardware counts a bound claim by its host's
// hardware, and an unbound one when every profile of the fleet that meets
// its own requirement meets the class's; when full, it holds back the
// claims that ask for it and keeps the others off its hosts.
func TestByHardware(t *testing.T) {
	g := NewWithT(t)
	tenant := &hostfleetv1alpha1.Tenant{ObjectMeta: metav1.ObjectMeta{Name: "a"}, Spec: hostfleetv1alpha1.TenantSpec{Quotas: []hostfleetv1alpha1.ClassQuota{
		{Name: "gpu", MaxClaims: 1, HostSelector: hostfleetv1alpha1.ClassSelector{Hardware: "host.gpus.size() > 0"}},
		{Name: "rack-gpu", MaxClaims: 5, HostSelector: hostfleetv1alpha1.ClassSelector{MatchLabels: map[string]string{"example.com/rack": "r1"}, Hardware: "host.gpus.size() > 0"}},
	}}}
	cls, err := classes.Of(tenant)
	g.Expect(err).NotTo(HaveOccurred())
	view := func(cores int64, gpus ...string) *hardware.View {
		v := &hardware.View{CPU: hardware.CPU{Count: cores}}
		for _, m := range gpus {
			v.GPUs = append(v.GPUs, hardware.GPU{Vendor: "NVIDIA", Model: m})
		}
		hardware.Normalize(v)
		return v
	}
	h100, a10, plain := view(64, "H100"), view(32, "A10"), view(128)
	f := classes.Fleet{Profiles: map[classes.Profile]*hardware.View{
		{Cluster: "infra-1", Name: hardware.Profile(h100)}: h100, {Cluster: "infra-1", Name: hardware.Profile(a10)}: a10, {Cluster: "infra-2", Name: hardware.Profile(plain)}: plain}}
	asking := func(expr string, mut func(*metal3api.HostClaim)) *metal3api.HostClaim {
		return claim(nil, func(c *metal3api.HostClaim) {
			if expr != "" {
				c.Annotations = map[string]string{hostfleetv1alpha1.AnnotationHardware: expr}
			}
			if mut != nil {
				mut(c)
			}
		})
	}
	gpuClass := cls[0]
	for _, tc := range []struct {
		name string
		c    *metal3api.HostClaim
		host *hardware.View
		want bool
	}{
		{"asks for an H100: every profile that has one has a GPU", asking(`host.gpus.exists(g, g.model == "H100")`, nil), nil, true},
		{"asks for a GPU of any model", asking(`host.gpus.size() >= 1`, nil), nil, true},
		{"asks for 32 cores: met by GPU and plain hosts alike", asking(`host.cpu.count >= 32`, nil), nil, false},
		{"asks for 128 cores: only the plain profile", asking(`host.cpu.count >= 128`, nil), nil, false},
		{"asks for what no profile has", asking(`host.cpu.count >= 1024`, nil), nil, false},
		{"asks nothing: the fleet has plain hosts", asking("", nil), nil, false},
		{"does not parse: meets nothing", asking(`host.cpu.cores > 1`, nil), nil, false},
		{"bound to a GPU host, asking nothing", asking("", bound(nil)), a10, true},
		{"bound to a plain host, asking for 32 cores", asking(`host.cpu.count >= 32`, bound(nil)), plain, false},
		{"bound, its host's hardware not copied yet: what it asks", asking(`host.gpus.size() >= 1`, bound(nil)), nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := f
			f.Host = func(*metal3api.HostClaim) *hardware.View { return tc.host }
			NewWithT(t).Expect(gpuClass.Of(tc.c, classes.Labels(tc.c, prefixes), f)).To(Equal(tc.want))
		})
	}

	f.Host = func(c *metal3api.HostClaim) *hardware.View { return a10 }
	held := []*metal3api.HostClaim{asking("", bound(map[string]string{"example.com/rack": "r2"}))}
	counts := classes.Counts(cls, held, prefixes, f)
	g.Expect(counts).To(Equal(map[string]int32{"gpu": 1, "rack-gpu": 0}), "a GPU host on rack r2 counts in gpu only")
	v := classes.Decide(cls, counts, asking(`host.gpus.exists(g, g.model == "H100")`, nil), prefixes, f)
	g.Expect(v.Held).To(Equal([]string{"gpu"}))
	v = classes.Decide(cls, counts, asking(`host.cpu.count >= 32`, nil), prefixes, f)
	g.Expect(v.Held).To(BeEmpty())
	g.Expect(v.Exclude).To(Equal([]hostfleetv1alpha1.ClassSelector{{Hardware: "host.gpus.size() > 0"}}), "kept off the GPU hosts")
	g.Expect(classes.Counts(cls, held, prefixes, classes.Fleet{})).To(Equal(map[string]int32{"gpu": 0, "rack-gpu": 0}), "no fleet known: no claim of a class by hardware")

	tenant.Spec.Quotas[0].HostSelector.Hardware = "host.gpus.len() > 0"
	_, err = classes.Of(tenant)
	g.Expect(err).To(MatchError(ContainSubstring("class gpu of tenant a: hostSelector.hardware")))
}
