package kubectl

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hostfleet/hostfleet/hub/api/hardware"
	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
)

// ProfileLine is what `fleet --hardware` says of one hardware profile on a
// cluster: its hosts over every pool of that profile.
type ProfileLine struct {
	Cluster, Profile string
	// View is the profile's hardware; nil for hosts not inspected.
	View             *hardware.View
	Available, Total int32
}

// Hardware is the view in a few words, or what is missing.
func (l ProfileLine) Hardware() string {
	if l.View == nil {
		return "not inspected (meets no hardware requirement)"
	}
	return hardware.Describe(l.View)
}

// Profiles sums each cluster's pools per hardware profile: per cluster, the
// least hardware first and the hosts not inspected last. Pure.
func Profiles(invs []hostfleetv1alpha1.HostInventory) []ProfileLine {
	var out []ProfileLine
	for _, inv := range invs {
		views := make(map[string]*hardware.View, len(inv.Status.Profiles))
		for i := range inv.Status.Profiles {
			views[inv.Status.Profiles[i].Name] = &inv.Status.Profiles[i].Hardware
		}
		at := map[string]int{}
		for _, p := range inv.Status.Pools {
			i, ok := at[p.Profile]
			if !ok {
				i = len(out)
				at[p.Profile] = i
				out = append(out, ProfileLine{Cluster: inv.Spec.ClusterName, Profile: p.Profile, View: views[p.Profile]})
			}
			out[i].Available += p.Available
			out[i].Total += p.Total
		}
	}
	slices.SortStableFunc(out, func(a, b ProfileLine) int {
		if c := strings.Compare(a.Cluster, b.Cluster); c != 0 {
			return c
		}
		if a.View == nil || b.View == nil {
			return cmpNil(a.View == nil, b.View == nil)
		}
		return cmp.Or(hardware.Compare(a.View, b.View), strings.Compare(a.Profile, b.Profile))
	})
	return out
}

// cmpNil orders the missing last.
func cmpNil(aNil, bNil bool) int {
	switch {
	case aNil == bNil:
		return 0
	case aNil:
		return 1
	}
	return -1
}

// printProfiles is `fleet --hardware`'s table.
func printProfiles(out io.Writer, invs []hostfleetv1alpha1.HostInventory) error {
	tw := tabwriter.NewWriter(out, 0, 4, 3, ' ', 0)
	fmt.Fprintln(tw, "CLUSTER\tPROFILE\tHARDWARE\tHOSTS AVAILABLE/TOTAL")
	for _, l := range Profiles(invs) {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d/%d\n", l.Cluster, dash(l.Profile), l.Hardware(), l.Available, l.Total)
	}
	fmt.Fprintln(tw)
	return tw.Flush()
}

// Fit is what `why` says of a cluster for a claim's hardware requirement:
// how many of its hosts meet it, or, when none does, its closest profiles
// and what each lacks.
type Fit struct {
	Cluster string
	// Available and Total count the hosts that meet the requirement.
	Available, Total int32
	// Closest are up to closestMax profiles nearest to the requirement
	// (fewest terms lacked, then the most hardware), when none meets it.
	Closest []Near
}

// Near is a profile that does not meet a requirement.
type Near struct {
	ProfileLine
	Lacks []string
}

// closestMax is how many of a cluster's closest profiles `why` names.
const closestMax = 2

// Fits judges every cluster's profiles against r. Pure.
func Fits(r *hardware.Requirement, lines []ProfileLine) []Fit {
	var out []Fit
	for _, l := range lines {
		if len(out) == 0 || out[len(out)-1].Cluster != l.Cluster {
			out = append(out, Fit{Cluster: l.Cluster})
		}
		f := &out[len(out)-1]
		if ok, _ := r.Meets(l.View); ok {
			f.Available += l.Available
			f.Total += l.Total
			continue
		}
		f.Closest = append(f.Closest, Near{ProfileLine: l, Lacks: r.Lacks(l.View)})
	}
	for i := range out {
		f := &out[i]
		if f.Total > 0 {
			f.Closest = nil
			continue
		}
		slices.SortStableFunc(f.Closest, func(a, b Near) int {
			if c := cmp.Compare(len(a.Lacks), len(b.Lacks)); c != 0 {
				return c
			}
			if a.View == nil || b.View == nil {
				return cmpNil(a.View == nil, b.View == nil)
			}
			return hardware.Compare(b.View, a.View)
		})
		f.Closest = f.Closest[:min(len(f.Closest), closestMax)]
	}
	return out
}

// printHardware, for a claim that asks for hardware and is not bound yet,
// prints the requirement and, for a caller who may read the inventories,
// each cluster's fit (only the claim's cluster once it is placed).
func printHardware(ctx context.Context, out io.Writer, c client.Client, claim *metal3api.HostClaim) {
	expr := claim.Annotations[hostfleetv1alpha1.AnnotationHardware]
	if expr == "" || claim.Status.BareMetalHost != nil {
		return
	}
	fmt.Fprintf(out, "\nHardware asked (%s): %s\n", hostfleetv1alpha1.AnnotationHardware, expr)
	r, err := hardware.Parse(expr)
	if err != nil {
		fmt.Fprintf(out, "  it does not parse, so no host meets it: %v\n", err)
		return
	}
	var invs hostfleetv1alpha1.HostInventoryList
	if err := c.List(ctx, &invs); err != nil {
		fmt.Fprintf(out, "  per cluster: not shown (%v)\n", explain(err, "list", "hostinventories", ""))
		return
	}
	placed := claim.Labels[hostfleetv1alpha1.LabelCluster]
	for _, f := range Fits(r, Profiles(invs.Items)) {
		if placed != "" && f.Cluster != placed {
			continue
		}
		if f.Total > 0 {
			fmt.Fprintf(out, "  %s: %d of the %d hosts that have it are available\n", f.Cluster, f.Available, f.Total)
			continue
		}
		fmt.Fprintf(out, "  %s: no host has it\n", f.Cluster)
		for _, n := range f.Closest {
			fmt.Fprintf(out, "    closest: %s (%d hosts): lacks %s\n", n.Hardware(), n.Total, strings.Join(n.Lacks, ", "))
		}
	}
}
