// Package hostwrites says who writes each field of a BareMetalHost the
// agent writes, and is the one way to write one: Patch, Apply and
// UpdateStatus refuse a change to a field the writing controller does not
// own (Check), write under the controller's own field manager, so that a
// host's managedFields show who owns what, and go through the agent's
// write fence (internal/fence). docs/architecture.md renders the table
// (Markdown). Fields the table does not name are nobody's: the agent
// writes none of them.
package hostwrites

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
	"github.com/hostfleet/hostfleet/internal/fence"
)

// Owner is a controller of the agent that writes hosts; its value is the
// field manager of its writes, and its name in the write fence.
type Owner string

// The agent's controllers that write hosts.
const (
	// Claims binds, syncs and releases hosts for claims (agent/claim).
	Claims Owner = hostfleetv1alpha1.FieldManagerAgent
	// Orphans marks and releases the hosts of claims that are gone
	// (agent/claim Orphans).
	Orphans Owner = "hostfleet-agent-orphans"
	// Usage reports host use and drops the intervals the hub settled
	// (agent/inventory UsageWriter).
	Usage Owner = "hostfleet-agent-usage"
	// Maintenance marks the hosts a HostMaintenance selects
	// (agent/maintenance).
	Maintenance Owner = "hostfleet-agent-maintenance"
	// BMCDriver drives hosts through their BMCs (agent/bmcdriver).
	BMCDriver Owner = "hostfleet-bmc-driver"
	// FirmwareGate judges and restores released hosts baremetal-operator
	// serves against their FirmwareBaselines (agent/firmwaregate).
	FirmwareGate Owner = "hostfleet-agent-firmware-gate"
)

// Owners are every owner, in the table's order.
var Owners = []Owner{Claims, Orphans, Usage, Maintenance, BMCDriver, FirmwareGate}

// Method is how a write is made.
type Method string

// The ways hosts are written.
const (
	// Locked is a merge patch carrying the host's resourceVersion: made on
	// a stale view, it fails rather than undo another's write.
	Locked Method = "patch"
	// Applied is server-side apply: the owner owns the fields it applies.
	Applied Method = "apply"
	// Status is an update of the status with the resourceVersion.
	Status Method = "status update"
)

// Op is what an owner does to a field.
type Op string

// What an owner may do.
const (
	Sets    Op = "sets and removes"
	Removes Op = "removes (a request carried out)"
)

// Write is one owner's right on one field.
type Write struct {
	Owner  Owner
	Op     Op
	Method Method
	// Why says what the field is for, in the table.
	Why string
}

// Fields of a BareMetalHost, as the table names them.
const (
	ConsumerRef       = "spec.consumerRef"
	CleaningMode      = "spec.automatedCleaningMode"
	Online            = "spec.online"
	Image             = "spec.image"
	CustomDeploy      = "spec.customDeploy"
	UserData          = "spec.userData"
	NetworkData       = "spec.networkData"
	MetaData          = "spec.metaData"
	DriverFinalizer   = "metadata.finalizers[" + hostfleetv1alpha1.BMCDriverFinalizer + "]"
	StatusField       = "status"
	PersistentReboots = "metadata.annotations[" + metal3api.RebootAnnotationPrefix + "/*]"
)

// Annotation names the field of one annotation.
func Annotation(k string) string { return "metadata.annotations[" + k + "]" }

// table is field → its writers; fieldOrder its rows in order.
var (
	table      = map[string][]Write{}
	fieldOrder []string
)

func row(field string, writes ...Write) {
	fieldOrder = append(fieldOrder, field)
	table[field] = writes
}

func init() {
	bind := func(why string) Write { return Write{Claims, Sets, Locked, why} }
	spec := func(why string) Write { return Write{Claims, Sets, Applied, why} }
	row(ConsumerRef, bind("the binding: set when bound, cleared when released"), Write{Orphans, Removes, Locked, "cleared when a host whose claim is gone is released"})
	row(CleaningMode, bind("erase at release, for hosts baremetal-operator serves"))
	for _, f := range []string{Online, Image, CustomDeploy, UserData, NetworkData, MetaData} {
		row(f, spec("the claim's power, image and data secrets; released at release"))
	}
	row(PersistentReboots, spec("the claim's reboot.metal3.io/<key> requests"))
	row(Annotation(metal3api.DetachedAnnotation), spec("the claim's detach, where a HostDeployPolicy allows it"))
	row(Annotation(metal3api.RebootAnnotationPrefix), bind("a claim's one-shot reboot request, handed on"),
		Write{BMCDriver, Removes, Locked, "done (baremetal-operator removes it from its own hosts)"})
	row(Annotation(metal3api.InspectAnnotationPrefix), Write{BMCDriver, Removes, Locked, "an inspection request, done"})
	for _, k := range []string{hostfleetv1alpha1.AnnotationHub, hostfleetv1alpha1.AnnotationClaimUID} {
		row(Annotation(k), bind("the binding's hub and claim UID"), Write{Orphans, Removes, Locked, "cleared when released"})
	}
	for _, k := range []string{hostfleetv1alpha1.AnnotationBoundAt, hostfleetv1alpha1.AnnotationBoundFor, hostfleetv1alpha1.AnnotationBoundClaim} {
		row(Annotation(k), bind("the open usage interval: set when bound, cleared when released"),
			Write{Orphans, Removes, Locked, "cleared when released"})
	}
	row(Annotation(hostfleetv1alpha1.AnnotationUsage), bind("a closed interval added when released"),
		Write{Orphans, Sets, Locked, "a closed interval added when released"},
		Write{Usage, Sets, Locked, "the intervals the hub settled, dropped"})
	row(Annotation(hostfleetv1alpha1.AnnotationErase), bind("the erase a BMC-driven host's release requires"),
		Write{BMCDriver, Removes, Locked, "erased"})
	row(Annotation(hostfleetv1alpha1.AnnotationOrphanedSince), Write{Orphans, Sets, Locked, "when the claim holding the host was first found gone"},
		Write{Claims, Removes, Locked, "cleared when released"})
	row(Annotation(hostfleetv1alpha1.AnnotationQuarantined), bind("a failed host replaced behind its claim, kept out of the pool until an administrator returns it"))
	row(Annotation(hostfleetv1alpha1.AnnotationRestore), Write{BMCDriver, Sets, Locked,
		"the restore to the firmware baselines after a release, or why the host is held (its administrator removes it to judge it again)"},
		Write{Claims, Sets, Locked, "a host baremetal-operator serves, released while the fleet has baselines: judged before it is free"},
		Write{Orphans, Sets, Locked, "the same, for a host whose claim is gone"},
		Write{FirmwareGate, Sets, Locked, "the judgement and restore of a host baremetal-operator serves, or why it is held"})
	row(Annotation(hostfleetv1alpha1.AnnotationBaselineObserved), Write{BMCDriver, Sets, Locked,
		"what the BMC read at inspection and when the host was last freed: what a tenant changes since is drifted"})
	row(Annotation(hostfleetv1alpha1.AnnotationMaintenance), Write{Maintenance, Sets, Locked, "the HostMaintenance that holds the host out of the pool"})
	row(DriverFinalizer, Write{BMCDriver, Sets, Locked, "kept until a driven host is off and its media ejected"})
	row(StatusField, Write{BMCDriver, Sets, Status, "what the BMC reports, for hosts no baremetal-operator serves"})
}

// Writers are the writes of a field, and whether anyone writes it.
func Writers(field string) ([]Write, bool) {
	w, ok := table[field]
	return w, ok
}

// ErrNotOwner is what Check returns for a change the owner may not make.
var ErrNotOwner = errors.New("not the field's owner")

// change is one field a write changes, and whether it removes it.
type change struct {
	field   string
	removed bool
}

// Changed lists the fields that differ between two hosts, as the table
// names them (a field the table does not name by its own path: any other
// spec field, annotation, label or finalizer).
func Changed(a, b *metal3api.BareMetalHost) []change {
	var out []change
	as, _ := runtime.DefaultUnstructuredConverter.ToUnstructured(&a.Spec)
	bs, _ := runtime.DefaultUnstructuredConverter.ToUnstructured(&b.Spec)
	for _, k := range slices.Sorted(maps.Keys(union(as, bs))) {
		if !equality.Semantic.DeepEqual(as[k], bs[k]) {
			_, there := bs[k]
			out = append(out, change{"spec." + k, !there})
		}
	}
	for _, k := range slices.Sorted(maps.Keys(union(a.Annotations, b.Annotations))) {
		av, aok := a.Annotations[k]
		bv, bok := b.Annotations[k]
		if av == bv && aok == bok {
			continue
		}
		f := Annotation(k)
		if strings.HasPrefix(k, metal3api.RebootAnnotationPrefix+"/") {
			f = PersistentReboots
		}
		out = append(out, change{f, !bok})
	}
	for _, k := range slices.Sorted(maps.Keys(union(a.Labels, b.Labels))) {
		if av, bv := a.Labels[k], b.Labels[k]; av != bv {
			out = append(out, change{"metadata.labels[" + k + "]", bv == ""})
		}
	}
	for _, f := range slices.Sorted(slices.Values(append(slices.Clone(a.Finalizers), b.Finalizers...))) {
		if slices.Contains(a.Finalizers, f) != slices.Contains(b.Finalizers, f) {
			out = append(out, change{"metadata.finalizers[" + f + "]", !slices.Contains(b.Finalizers, f)})
		}
	}
	if !equality.Semantic.DeepEqual(a.Status, b.Status) {
		out = append(out, change{StatusField, false})
	}
	return slices.CompactFunc(out, func(x, y change) bool { return x == y })
}

func union[V any](a, b map[string]V) map[string]V {
	out := maps.Clone(a)
	if out == nil {
		out = map[string]V{}
	}
	maps.Copy(out, b)
	return out
}

// Check refuses the changes from orig to h that owner may not make with
// method, naming each field and its owners.
func Check(owner Owner, method Method, orig, h *metal3api.BareMetalHost) error {
	var bad []string
	for _, c := range Changed(orig, h) {
		if !allowed(owner, method, c) {
			bad = append(bad, fmt.Sprintf("%s (%s)", c.field, owners(c.field)))
		}
	}
	if len(bad) > 0 {
		return fmt.Errorf("%w: %s may not write %s of host %s/%s by %s", ErrNotOwner, owner, strings.Join(bad, ", "), h.Namespace, h.Name, method)
	}
	return nil
}

func allowed(owner Owner, method Method, c change) bool {
	for _, w := range table[c.field] {
		if w.Owner == owner && w.Method == method && (w.Op == Sets || c.removed) {
			return true
		}
	}
	return false
}

func owners(field string) string {
	var out []string
	for _, w := range table[field] {
		out = append(out, string(w.Owner))
	}
	if len(out) == 0 {
		return "nobody's"
	}
	return strings.Join(out, ", ") + "'s"
}

// Writer writes hosts as one owner: under its field manager, through the
// agent's fence under Name (the owner's, if empty: two controllers of one
// owner, such as the claim controllers of hub and local claims, each see
// the other's writes as news).
type Writer struct {
	Client client.Client
	Fence  *fence.Fence
	Owner  Owner
	Name   string
}

// name is the writer's name in the fence.
func (w Writer) name() string {
	if w.Name != "" {
		return w.Name
	}
	return string(w.Owner)
}

// Patch writes h, changed from orig: a merge patch with the host's
// resourceVersion. A change the owner may not make is refused, and h left
// as orig.
func (w Writer) Patch(ctx context.Context, h, orig *metal3api.BareMetalHost) error {
	if err := Check(w.Owner, Locked, orig, h); err != nil {
		orig.DeepCopyInto(h)
		return err
	}
	return w.Fence.PatchLocked(ctx, w.Client, w.name(), fence.Hosts, h, orig, client.FieldOwner(string(w.Owner)))
}

// UpdateStatus writes h's status, changed from orig, with its
// resourceVersion.
func (w Writer) UpdateStatus(ctx context.Context, h, orig *metal3api.BareMetalHost) error {
	if err := Check(w.Owner, Status, orig, h); err != nil {
		return err
	}
	return w.Fence.Write(w.name(), fence.Hosts, h, func() error {
		return w.Client.Status().Update(ctx, h, client.FieldOwner(string(w.Owner)))
	})
}

// Apply server-side applies u (a BareMetalHost's spec fields and
// annotations); the owner must own each field it names.
func (w Writer) Apply(ctx context.Context, u *unstructured.Unstructured) error {
	var bad []string
	spec, _ := u.Object["spec"].(map[string]interface{})
	for k := range spec {
		if !allowed(w.Owner, Applied, change{field: "spec." + k}) {
			bad = append(bad, "spec."+k)
		}
	}
	for k := range u.GetAnnotations() {
		f := Annotation(k)
		if strings.HasPrefix(k, metal3api.RebootAnnotationPrefix+"/") {
			f = PersistentReboots
		}
		if !allowed(w.Owner, Applied, change{field: f}) {
			bad = append(bad, f)
		}
	}
	if len(bad) > 0 {
		slices.Sort(bad)
		return fmt.Errorf("%w: %s may not apply %s of host %s/%s", ErrNotOwner, w.Owner, strings.Join(bad, ", "), u.GetNamespace(), u.GetName())
	}
	return w.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(string(w.Owner)), client.ForceOwnership)
}

// Markdown is the table, for docs/architecture.md: a row per set of
// fields written alike, each writer with what it does and how.
func Markdown() string {
	var b strings.Builder
	b.WriteString("| fields | written by (field manager): what, how |\n|---|---|\n")
	var rows []string
	fields := map[string][]string{}
	for _, f := range fieldOrder {
		var ws []string
		for _, w := range table[f] {
			ws = append(ws, fmt.Sprintf("%s (`%s`): %s, %s", name(w.Owner), w.Owner, short(w.Op), w.Method))
		}
		k := strings.Join(ws, "; ")
		if _, ok := fields[k]; !ok {
			rows = append(rows, k)
		}
		fields[k] = append(fields[k], "`"+f+"`")
	}
	for _, k := range rows {
		fmt.Fprintf(&b, "| %s | %s |\n", strings.Join(fields[k], ", "), k)
	}
	return b.String()
}

// short is what the docs say an owner does.
func short(op Op) string {
	if op == Removes {
		return "removes"
	}
	return "sets"
}

// name is what the docs call an owner.
func name(o Owner) string {
	return map[Owner]string{Claims: "claim controller", Orphans: "orphaned-host controller", Usage: "usage reporter",
		Maintenance: "maintenance controller", BMCDriver: "BMC driver", FirmwareGate: "release gate"}[o]
}
