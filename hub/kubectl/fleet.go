package kubectl

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/labels"
	addonv1beta1 "open-cluster-management.io/api/addon/v1beta1"

	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
)

func fleetFlags(fs *pflag.FlagSet) func(context.Context, *Env, []string) error {
	hw := fs.Bool("hardware", false, "also list each cluster's hardware profiles")
	return func(ctx context.Context, env *Env, args []string) error {
		if len(args) > 0 {
			return fmt.Errorf("fleet takes no argument (got %q)", args[0])
		}
		return fleet(ctx, env, *hw)
	}
}

// ClusterLine is what `fleet` says of a cluster.
type ClusterLine struct {
	Cluster, Agent   string
	Available, Total int32
	Pools, Tenants   []string
}

func fleet(ctx context.Context, env *Env, hw bool) error {
	c := env.Client
	var invs hostfleetv1alpha1.HostInventoryList
	if err := c.List(ctx, &invs); err != nil {
		return fmt.Errorf("fleet is a hub administrator's view: %w", explain(err, "list", "hostinventories", ""))
	}
	var tenancies hostfleetv1alpha1.ClusterTenancyList
	if err := c.List(ctx, &tenancies); err != nil {
		return explain(err, "list", "clustertenancies", "")
	}
	var addons addonv1beta1.ManagedClusterAddOnList
	if err := c.List(ctx, &addons); err != nil {
		return explain(err, "list", "managedclusteraddons", "")
	}
	var tenants hostfleetv1alpha1.TenantList
	if err := c.List(ctx, &tenants); err != nil {
		return explain(err, "list", "tenants", "")
	}
	lines := Clusters(invs.Items, tenancies.Items, addons.Items)
	tw := tabwriter.NewWriter(env.Out, 0, 4, 3, ' ', 0)
	fmt.Fprintln(tw, "CLUSTER\tAGENT\tHOSTS AVAILABLE/TOTAL\tPOOLS (AVAILABLE/TOTAL)\tTENANTS")
	for _, l := range lines {
		fmt.Fprintf(tw, "%s\t%s\t%d/%d\t%s\t%s\n", l.Cluster, l.Agent, l.Available, l.Total, dash(strings.Join(l.Pools, "; ")), dash(strings.Join(l.Tenants, ",")))
	}
	fmt.Fprintln(tw)
	if hw {
		if err := tw.Flush(); err != nil {
			return err
		}
		if err := printProfiles(env.Out, invs.Items); err != nil {
			return err
		}
	}
	fmt.Fprintln(tw, "TENANT\tCLUSTER SET\tCLAIMS\tREADY\tMAX CLAIMS\tCLASSES (CLAIMS/MAX)\tSTATUS")
	for _, t := range tenants.Items {
		limit := "-"
		if t.Spec.MaxClaims != nil {
			limit = fmt.Sprint(*t.Spec.MaxClaims)
		}
		status := "Unknown"
		if r := meta.FindStatusCondition(t.Status.Conditions, hostfleetv1alpha1.ConditionReady); r != nil {
			status = r.Reason
		}
		var classes []string
		for _, c := range t.Status.Classes {
			classes = append(classes, fmt.Sprintf("%s %d/%d", c.Name, c.Claims, c.MaxClaims))
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%s\t%s\t%s\n", t.Name, t.Spec.ClusterSet, t.Status.Claims, t.Status.ReadyClaims, limit,
			dash(strings.Join(classes, ", ")), status)
	}
	return tw.Flush()
}

// Clusters sums up each cluster that has an inventory, a ClusterTenancy or
// the add-on: its agent's health, its hosts per pool and the tenants it
// serves. Pure.
func Clusters(invs []hostfleetv1alpha1.HostInventory, tenancies []hostfleetv1alpha1.ClusterTenancy, addons []addonv1beta1.ManagedClusterAddOn) []ClusterLine {
	byName := map[string]*ClusterLine{}
	line := func(name string) *ClusterLine {
		if byName[name] == nil {
			byName[name] = &ClusterLine{Cluster: name, Agent: "no add-on"}
		}
		return byName[name]
	}
	for _, inv := range invs {
		l := line(inv.Spec.ClusterName)
		l.Available, l.Total = inv.Status.Available, inv.Status.Total
		for _, p := range inv.Status.Pools {
			pool := fmt.Sprintf("%s: %d/%d", poolName(p), p.Available, p.Total)
			if p.Held > 0 {
				pool += fmt.Sprintf(", %d held", p.Held)
			}
			pool += standing(p.Firmware)
			l.Pools = append(l.Pools, pool)
		}
	}
	for _, t := range tenancies {
		l := line(t.Spec.ClusterName)
		for _, s := range t.Spec.Tenants {
			l.Tenants = append(l.Tenants, s.Name)
		}
		for _, s := range t.Spec.WorkloadTenants {
			l.Tenants = append(l.Tenants, s.Name+" (workload)")
		}
	}
	for _, a := range addons {
		if a.Name != hostfleetv1alpha1.AddonName {
			continue
		}
		l := line(a.Namespace)
		l.Agent = "Unknown"
		if c := meta.FindStatusCondition(a.Status.Conditions, addonv1beta1.ManagedClusterAddOnConditionAvailable); c != nil {
			l.Agent = map[bool]string{true: "Available", false: "Unavailable"}[c.Status == "True"]
		}
	}
	var out []ClusterLine
	for _, l := range byName {
		out = append(out, *l)
	}
	slices.SortFunc(out, func(a, b ClusterLine) int { return strings.Compare(a.Cluster, b.Cluster) })
	return out
}

// poolName is a pool's labels, or "all" when it has none, and its
// hardware profile when it has one.
func poolName(p hostfleetv1alpha1.HostPool) string {
	name := "all"
	if len(p.Labels) > 0 {
		name = labels.Set(p.Labels).String()
	}
	if p.Profile != "" {
		name += " [" + p.Profile + "]"
	}
	return name
}

// standing says a pool's hosts that are not as their FirmwareBaselines
// want, as last read: nothing when all are.
func standing(s *hostfleetv1alpha1.FirmwareStanding) string {
	if s == nil {
		return ""
	}
	out := ""
	for _, c := range []struct {
		n    int32
		what string
	}{{s.Behind, "behind"}, {s.Drifted, "drifted"}, {s.Unknown, "firmware unknown"}} {
		if c.n > 0 {
			out += fmt.Sprintf(", %d %s", c.n, c.what)
		}
	}
	return out
}
