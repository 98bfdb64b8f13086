package claimstatus

import (
	"errors"
	"os"
	"strings"
	"testing"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
)

// set writes field with some value into a status.
func set(st *metal3api.HostClaimStatus, field string) {
	switch field {
	case BareMetalHost:
		st.BareMetalHost = &metal3api.ObjectReference{Namespace: "hosts", Name: "h"}
	case HardwareData:
		st.HardwareData = &metal3api.ObjectReference{Namespace: "tenant-a", Name: "c"}
	case PoweredOn:
		st.PoweredOn = true
	case LastUpdated:
		now := metav1.Now()
		st.LastUpdated = &now
	default:
		t := strings.TrimSuffix(strings.TrimPrefix(field, "conditions["), "]")
		meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: t, Status: metav1.ConditionTrue, Reason: "Written"})
	}
}

// TestEveryWriteByItsOwnerOnly: for every field and kind of claim, its
// owner may write it and every other controller is refused; a field nobody
// owns on a kind (the forwarder's Forwarded on a pull-path claim) is
// refused to all.
func TestEveryWriteByItsOwnerOnly(t *testing.T) {
	owners := []Owner{Scheduler, Lease, Maintenance, Forwarder, Agent, WorkloadAgent, BaremetalOperator}
	for _, kind := range Kinds {
		for _, field := range fieldOrder {
			for _, o := range owners {
				c := &metal3api.HostClaim{}
				_, changed, err := Update(o, kind, c, func(st *metal3api.HostClaimStatus) { set(st, field) })
				want, owned := OwnerOf(kind, field)
				if owned && o == want {
					if err != nil || !changed {
						t.Errorf("%s on a %s: %s, its owner, may write it: changed %t, %v", field, kind, o, changed, err)
					}
					continue
				}
				if !errors.Is(err, ErrNotOwner) {
					t.Errorf("%s on a %s: %s may not write it (owner %q): got %v", field, kind, o, want, err)
				}
				if c.Status.BareMetalHost != nil || len(c.Status.Conditions) > 0 || c.Status.PoweredOn || c.Status.LastUpdated != nil {
					t.Errorf("%s on a %s: a refused write leaves the claim as it was: %+v", field, kind, c.Status)
				}
			}
		}
	}
}

func TestChanged(t *testing.T) {
	g := NewWithT(t)
	cond := func(reason string, at int64) metav1.Condition {
		return metav1.Condition{Type: hostfleetv1alpha1.ConditionReady, Status: metav1.ConditionTrue, Reason: reason,
			LastTransitionTime: metav1.Unix(at, 0)}
	}
	a := &metal3api.HostClaimStatus{Conditions: []metav1.Condition{cond("Ready", 1)}}
	b := &metal3api.HostClaimStatus{Conditions: []metav1.Condition{cond("Ready", 2)}}
	g.Expect(Changed(a, b)).To(BeEmpty(), "a transition time alone is no change")
	b.Conditions[0].Reason = "Provisioning"
	g.Expect(Changed(a, b)).To(Equal([]string{Condition(hostfleetv1alpha1.ConditionReady)}))
	b.Conditions = append(b.Conditions, metav1.Condition{Type: hostfleetv1alpha1.ConditionPaused})
	b.PoweredOn = true
	g.Expect(Changed(a, b)).To(Equal([]string{PoweredOn, Condition(hostfleetv1alpha1.ConditionPaused), Condition(hostfleetv1alpha1.ConditionReady)}))
}

func TestKinds(t *testing.T) {
	g := NewWithT(t)
	c := &metal3api.HostClaim{}
	g.Expect(HubKind(c)).To(Equal(HubUnplaced))
	c.Labels = map[string]string{hostfleetv1alpha1.LabelCluster: "c1"}
	g.Expect(HubKind(c)).To(Equal(HubUnplaced), "a pin the scheduler has not admitted is served by nobody yet")
	c.Status.Conditions = []metav1.Condition{{Type: hostfleetv1alpha1.ConditionScheduled, Status: metav1.ConditionTrue, Reason: hostfleetv1alpha1.ReasonPinned}}
	g.Expect(HubKind(c)).To(Equal(HubBaremetal))
	c.Status.Conditions = nil
	c.Annotations = map[string]string{hostfleetv1alpha1.AnnotationPlacedBy: hostfleetv1alpha1.PlacedByScheduler}
	g.Expect(HubKind(c)).To(Equal(HubBaremetal))
	c.Labels[hostfleetv1alpha1.LabelKind] = hostfleetv1alpha1.KindRemote
	g.Expect(HubKind(c)).To(Equal(HubRemote))
	delete(c.Labels, hostfleetv1alpha1.LabelCluster)
	g.Expect(HubKind(c)).To(Equal(HubRemote), "a remote claim's status is the forwarder's, placed or not")
	g.Expect(LocalKind(c)).To(Equal(Local))
	c.Finalizers = []string{metal3api.HostClaimFinalizer}
	g.Expect(LocalKind(c)).To(Equal(LocalShared))
}

// TestArchitectureDocument: docs/architecture.md shows the table this
// package enforces, as it is.
func TestArchitectureDocument(t *testing.T) {
	doc, err := os.ReadFile("../../docs/architecture.md")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(doc), Markdown()) {
		t.Errorf("docs/architecture.md does not hold the ownership table as internal/claimstatus has it; paste:\n%s", Markdown())
	}
}
