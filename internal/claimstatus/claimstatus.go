// Package claimstatus writes a HostClaim's status for the one controller
// that owns each of its fields. The ownership table (Owner, by the claim's
// Kind) is the only place that says who writes what; Update and Write
// refuse a change to a field the writing controller does not own, so that
// no two controllers write one field (and none fights another over it).
// docs/architecture.md renders the table (Markdown).
package claimstatus

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
	"github.com/hostfleet/hostfleet/internal/conditions"
)

// Owner is a controller that writes HostClaim status.
type Owner string

// The controllers that write HostClaim status.
const (
	// Scheduler is the hub's scheduler (hub/scheduler).
	Scheduler Owner = "scheduler"
	// Lease is the hub's lease controller (hub/lease).
	Lease Owner = "lease controller"
	// Maintenance is the hub's maintenance controller (hub/maintenance).
	Maintenance Owner = "maintenance controller"
	// Forwarder is the hub's forwarder of remote claims (hub/forwarder).
	Forwarder Owner = "forwarder"
	// Agent is the agent of the claim's infrastructure cluster
	// (agent/claim), or of the cluster a local claim is on.
	Agent Owner = "agent"
	// WorkloadAgent is the agent of the tenant's workload cluster
	// (agent/nodelabels).
	WorkloadAgent Owner = "workload agent"
	// BaremetalOperator is baremetal-operator's HostClaim controller
	// (v0.14 --hostclaims), on a local claim it reconciles too.
	BaremetalOperator Owner = "baremetal-operator"
)

// Kind is what a claim is, as far as who writes its status goes.
type Kind string

// The kinds of claims.
const (
	// HubUnplaced is a hub claim on the pull path not placed on a cluster
	// yet: no agent serves it.
	HubUnplaced Kind = "unplaced hub claim"
	// HubBaremetal is a hub claim on the pull path, placed.
	HubBaremetal Kind = "hub claim"
	// HubRemote is a hub claim forwarded over ManifestWork.
	HubRemote Kind = "remote hub claim"
	// Local is a claim on an infrastructure cluster the agent serves
	// (--local-claims).
	Local Kind = "local claim"
	// LocalShared is a local claim baremetal-operator's HostClaim
	// controller reconciles too (its finalizer): it writes Associated and
	// Ready on every reconcile.
	LocalShared Kind = "local claim baremetal-operator also reconciles"
)

// Kinds are every kind, in the table's order.
var Kinds = []Kind{HubUnplaced, HubBaremetal, HubRemote, Local, LocalShared}

// HubKind is the kind of a hub claim. A pin the scheduler has not
// admitted is not served yet: unplaced.
func HubKind(c *metal3api.HostClaim) Kind {
	switch {
	case c.Labels[hostfleetv1alpha1.LabelKind] == hostfleetv1alpha1.KindRemote:
		return HubRemote
	case c.Labels[hostfleetv1alpha1.LabelCluster] == "" || !conditions.Admitted(c):
		return HubUnplaced
	}
	return HubBaremetal
}

// LocalKind is the kind of a local claim.
func LocalKind(c *metal3api.HostClaim) Kind {
	if slices.Contains(c.Finalizers, metal3api.HostClaimFinalizer) {
		return LocalShared
	}
	return Local
}

// Fields of a HostClaim's status, as the table names them; a condition is
// Condition(type).
const (
	BareMetalHost = "bareMetalHost"
	HardwareData  = "hardwareData"
	PoweredOn     = "poweredOn"
	LastUpdated   = "lastUpdated"
)

// Condition names the field of one condition type.
func Condition(t string) string { return "conditions[" + t + "]" }

// owners is the table: field → owner, by kind. A kind without an entry
// has no owner for the field: nobody writes it.
var owners = map[string]map[Kind]Owner{}

// fieldOrder is the table's rows, in order.
var fieldOrder []string

func row(field string, unplaced, hub, remote, local, shared Owner) {
	fieldOrder = append(fieldOrder, field)
	m := map[Kind]Owner{}
	for k, o := range map[Kind]Owner{HubUnplaced: unplaced, HubBaremetal: hub, HubRemote: remote, Local: local, LocalShared: shared} {
		if o != "" {
			m[k] = o
		}
	}
	owners[field] = m
}

func init() {
	row(Condition(hostfleetv1alpha1.ConditionScheduled), Scheduler, Scheduler, Scheduler, "", "")
	row(Condition(hostfleetv1alpha1.ConditionForwarded), "", "", Forwarder, "", "")
	row(Condition(hostfleetv1alpha1.ConditionAssociated), "", Agent, Forwarder, Agent, BaremetalOperator)
	for _, t := range []string{hostfleetv1alpha1.ConditionSynchronized, hostfleetv1alpha1.ConditionProvisioned,
		hostfleetv1alpha1.ConditionAvailableForProvisioning} {
		row(Condition(t), "", Agent, Forwarder, Agent, Agent)
	}
	row(Condition(hostfleetv1alpha1.ConditionReady), Scheduler, Agent, Forwarder, Agent, BaremetalOperator)
	row(Condition(hostfleetv1alpha1.ConditionPaused), "", Agent, Forwarder, Agent, Agent)
	row(Condition(hostfleetv1alpha1.ConditionHostHealthy), "", Agent, Forwarder, Agent, Agent)
	row(Condition(hostfleetv1alpha1.ConditionLeaseExpiring), Lease, Lease, Lease, "", "")
	row(Condition(hostfleetv1alpha1.ConditionMaintenanceRequested), "", Maintenance, Maintenance, "", "")
	row(Condition(hostfleetv1alpha1.ConditionNodeLabelsSynced), WorkloadAgent, WorkloadAgent, WorkloadAgent, "", "")
	row(Condition(hostfleetv1alpha1.ConditionNodeReady), WorkloadAgent, WorkloadAgent, WorkloadAgent, "", "")
	for _, f := range []string{BareMetalHost, HardwareData, PoweredOn, LastUpdated} {
		row(f, "", Agent, Forwarder, Agent, Agent)
	}
}

// OwnerOf is who writes a field of a claim of kind, and whether anyone does.
func OwnerOf(kind Kind, field string) (Owner, bool) {
	o, ok := owners[field][kind]
	return o, ok
}

// Owns says whether owner writes the field on a claim of kind.
func Owns(owner Owner, kind Kind, field string) bool {
	o, ok := OwnerOf(kind, field)
	return ok && o == owner
}

// ErrNotOwner is what Update and Write return for a change to a field the
// writer does not own.
var ErrNotOwner = errors.New("not the field's owner")

// Changed lists the fields whose values differ between two statuses: a
// condition differs in its status, reason, message or observedGeneration,
// or is there in one only (a condition whose lastTransitionTime alone
// differs has not changed).
func Changed(a, b *metal3api.HostClaimStatus) []string {
	var out []string
	if !refEqual(a.BareMetalHost, b.BareMetalHost) {
		out = append(out, BareMetalHost)
	}
	if !refEqual(a.HardwareData, b.HardwareData) {
		out = append(out, HardwareData)
	}
	if a.PoweredOn != b.PoweredOn {
		out = append(out, PoweredOn)
	}
	if (a.LastUpdated == nil) != (b.LastUpdated == nil) || a.LastUpdated != nil && !a.LastUpdated.Equal(b.LastUpdated) {
		out = append(out, LastUpdated)
	}
	types := map[string]bool{}
	for _, c := range append(slices.Clone(a.Conditions), b.Conditions...) {
		types[c.Type] = true
	}
	for _, t := range slices.Sorted(maps.Keys(types)) {
		x, y := meta.FindStatusCondition(a.Conditions, t), meta.FindStatusCondition(b.Conditions, t)
		if (x == nil) != (y == nil) || x != nil && (x.Status != y.Status || x.Reason != y.Reason || x.Message != y.Message ||
			x.ObservedGeneration != y.ObservedGeneration) {
			out = append(out, Condition(t))
		}
	}
	return out
}

func refEqual(a, b *metal3api.ObjectReference) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

// Check refuses the changes from old to new that owner may not make on a
// claim of kind, naming each field and its owner.
func Check(owner Owner, kind Kind, old, new *metal3api.HostClaimStatus) error {
	var bad []string
	for _, f := range Changed(old, new) {
		if o, ok := OwnerOf(kind, f); !ok || o != owner {
			who := "nobody"
			if ok {
				who = string(o)
			}
			bad = append(bad, fmt.Sprintf("%s (%s's)", f, who))
		}
	}
	if len(bad) > 0 {
		return fmt.Errorf("%w: %s may not write %s of a %s", ErrNotOwner, owner, strings.Join(bad, ", "), kind)
	}
	return nil
}

// Update applies mutate to c's status as owner writes it: it refuses
// (ErrNotOwner, c unchanged) a change to a field owner does not own. It
// returns c as it was, and whether anything changed.
func Update(owner Owner, kind Kind, c *metal3api.HostClaim, mutate func(*metal3api.HostClaimStatus)) (*metal3api.HostClaim, bool, error) {
	orig := c.DeepCopy()
	mutate(&c.Status)
	if err := Check(owner, kind, &orig.Status, &c.Status); err != nil {
		c.Status = orig.Status
		return orig, false, fmt.Errorf("status of %s/%s: %w", c.Namespace, c.Name, err)
	}
	return orig, len(Changed(&orig.Status, &c.Status)) > 0, nil
}

// Write is Update, then, when anything changed, one status patch with the
// claim's resourceVersion: a write from a stale view of the claim fails
// (a conflict) rather than undo another's.
func Write(ctx context.Context, cl client.Client, owner Owner, kind Kind, c *metal3api.HostClaim, mutate func(*metal3api.HostClaimStatus)) (bool, error) {
	orig, changed, err := Update(owner, kind, c, mutate)
	if err != nil || !changed {
		return false, err
	}
	if err := cl.Status().Patch(ctx, c, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{})); err != nil {
		return false, fmt.Errorf("write the status of %s/%s: %w", c.Namespace, c.Name, err)
	}
	return true, nil
}

// Markdown is the table, for docs/architecture.md: a row per field, a
// column per kind.
func Markdown() string {
	var b strings.Builder
	b.WriteString("| field |")
	for _, k := range Kinds {
		fmt.Fprintf(&b, " %s |", k)
	}
	b.WriteString("\n|---|")
	for range Kinds {
		b.WriteString("---|")
	}
	b.WriteString("\n")
	for _, f := range fieldOrder {
		fmt.Fprintf(&b, "| `%s` |", f)
		for _, k := range Kinds {
			o, ok := OwnerOf(k, f)
			if !ok {
				o = "—"
			}
			fmt.Fprintf(&b, " %s |", o)
		}
		b.WriteString("\n")
	}
	return b.String()
}
