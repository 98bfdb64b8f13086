package hostwrites

import (
	"errors"
	"os"
	"strings"
	"testing"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
)

// set changes one field of the table on h: sets it, or removes it.
func set(h *metal3api.BareMetalHost, field string, remove bool) {
	v := "x"
	switch field {
	case ConsumerRef:
		h.Spec.ConsumerRef = &corev1.ObjectReference{Name: v}
	case CleaningMode:
		h.Spec.AutomatedCleaningMode = metal3api.CleaningModeMetadata
	case Online:
		h.Spec.Online = true
	case Image:
		h.Spec.Image = &metal3api.Image{URL: v}
	case CustomDeploy:
		h.Spec.CustomDeploy = &metal3api.CustomDeploy{Method: v}
	case UserData:
		h.Spec.UserData = &corev1.SecretReference{Name: v}
	case NetworkData:
		h.Spec.NetworkData = &corev1.SecretReference{Name: v}
	case MetaData:
		h.Spec.MetaData = &corev1.SecretReference{Name: v}
	case DriverFinalizer:
		h.Finalizers = []string{hostfleetv1alpha1.BMCDriverFinalizer}
	case StatusField:
		h.Status.ErrorMessage = v
	case PersistentReboots:
		h.Annotations = map[string]string{metal3api.RebootAnnotationPrefix + "/k": v}
	default:
		k := strings.TrimSuffix(strings.TrimPrefix(field, "metadata.annotations["), "]")
		h.Annotations = map[string]string{k: v}
	}
	if remove {
		// The field was there, and goes.
		*h = metal3api.BareMetalHost{ObjectMeta: metav1.ObjectMeta{Namespace: "hosts", Name: "h0"}}
	}
}

// TestHostWritesByTheirOwnersOnly: for every field of the table, every
// owner and every way of writing, a write is let through exactly when the
// table gives that owner that right (a removal-only right lets a removal
// through and nothing else); a refused write leaves the host as it was.
// Fields nobody owns, the agent never writes.
func TestHostWritesByTheirOwnersOnly(t *testing.T) {
	methods := []Method{Locked, Status}
	for _, field := range fieldOrder {
		for _, o := range Owners {
			for _, m := range methods {
				for _, remove := range []bool{false, true} {
					orig := &metal3api.BareMetalHost{ObjectMeta: metav1.ObjectMeta{Namespace: "hosts", Name: "h0"}}
					h := orig.DeepCopy()
					if remove {
						set(orig, field, false)
						h = orig.DeepCopy()
					}
					set(h, field, remove)
					err := Check(o, m, orig, h)
					want := false
					for _, w := range table[field] {
						want = want || w.Owner == o && w.Method == m && (w.Op == Sets || remove)
					}
					if want && err != nil {
						t.Errorf("%s by %s (%s, remove %t): its owner may: %v", field, o, m, remove, err)
					}
					if !want && !errors.Is(err, ErrNotOwner) {
						t.Errorf("%s by %s (%s, remove %t): not its right, got %v", field, o, m, remove, err)
					}
				}
			}
		}
	}
	g := NewWithT(t)
	orig := &metal3api.BareMetalHost{ObjectMeta: metav1.ObjectMeta{Namespace: "hosts", Name: "h0"}}
	for _, nobodys := range []func(h *metal3api.BareMetalHost){
		func(h *metal3api.BareMetalHost) { h.Spec.BMC.Address = "ipmi://elsewhere" },
		func(h *metal3api.BareMetalHost) { h.Labels = map[string]string{"rack": "r1"} },
		func(h *metal3api.BareMetalHost) { h.Annotations = map[string]string{"example.com/x": "y"} },
		func(h *metal3api.BareMetalHost) { h.Finalizers = []string{"example.com/keep"} },
	} {
		h := orig.DeepCopy()
		nobodys(h)
		for _, o := range Owners {
			g.Expect(Check(o, Locked, orig, h)).To(MatchError(ErrNotOwner), "nobody's: %+v", h.ObjectMeta)
		}
	}
}

// TestApplyChecksEveryField: a server-side apply names only fields its
// owner applies.
func TestApplyChecksEveryField(t *testing.T) {
	g := NewWithT(t)
	w := Writer{Owner: Claims}
	u := &unstructured.Unstructured{Object: map[string]interface{}{"apiVersion": "metal3.io/v1alpha1", "kind": "BareMetalHost",
		"metadata": map[string]interface{}{"namespace": "hosts", "name": "h0", "annotations": map[string]interface{}{"hostfleet.io/maintenance": "m"}},
		"spec":     map[string]interface{}{"online": true, "bmc": map[string]interface{}{"address": "x"}}}}
	err := w.Apply(t.Context(), u)
	g.Expect(err).To(MatchError(ErrNotOwner))
	g.Expect(err.Error()).To(And(ContainSubstring("metadata.annotations[hostfleet.io/maintenance]"), ContainSubstring("spec.bmc")))
	g.Expect(err.Error()).NotTo(ContainSubstring("spec.online"))
}

// TestArchitectureDocument: docs/architecture.md shows the table.
func TestArchitectureDocument(t *testing.T) {
	doc, err := os.ReadFile("../../docs/architecture.md")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(doc), Markdown()) {
		t.Errorf("docs/architecture.md does not hold the host field table as internal/hostwrites has it; paste:\n%s", Markdown())
	}
}
