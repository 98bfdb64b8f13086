package kubectl

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
)

// Row is one claim as `claims` prints it.
type Row struct {
	Namespace string    `json:"namespace"`
	Name      string    `json:"name"`
	Tenant    string    `json:"tenant,omitempty"`
	Kind      string    `json:"kind"`
	Cluster   string    `json:"cluster,omitempty"`
	Host      string    `json:"host,omitempty"`
	Power     string    `json:"power"`
	Ready     string    `json:"ready"`
	Reason    string    `json:"reason,omitempty"`
	Message   string    `json:"message,omitempty"`
	Created   time.Time `json:"created"`
}

// RowOf is what `claims` says of c; tenants maps namespaces to tenants.
func RowOf(c *metal3api.HostClaim, tenants map[string]string) Row {
	r := Row{Namespace: c.Namespace, Name: c.Name, Tenant: tenants[c.Namespace], Kind: "local",
		Cluster: c.Labels[hostfleetv1alpha1.LabelCluster], Power: "off", Ready: "Unknown", Created: c.CreationTimestamp.Time}
	if c.Labels[hostfleetv1alpha1.LabelKind] == hostfleetv1alpha1.KindRemote {
		r.Kind = hostfleetv1alpha1.KindRemote
	}
	if h := c.Status.BareMetalHost; h != nil {
		r.Host = h.Name
	}
	if c.Status.PoweredOn {
		r.Power = "on"
	}
	if c.Status.PoweredOn != c.Spec.PoweredOn && r.Host != "" {
		r.Power += "→" + map[bool]string{true: "on", false: "off"}[c.Spec.PoweredOn]
	}
	if cond := meta.FindStatusCondition(c.Status.Conditions, hostfleetv1alpha1.ConditionReady); cond != nil {
		r.Ready, r.Reason, r.Message = string(cond.Status), cond.Reason, cond.Message
	} else {
		// Before any agent reports: why the hub has not placed or forwarded it.
		for _, t := range []string{hostfleetv1alpha1.ConditionScheduled, hostfleetv1alpha1.ConditionForwarded} {
			if cond := meta.FindStatusCondition(c.Status.Conditions, t); cond != nil && cond.Status != metav1.ConditionTrue {
				r.Reason, r.Message = cond.Reason, cond.Message
				break
			}
		}
	}
	if !c.DeletionTimestamp.IsZero() {
		r.Ready, r.Reason = "Deleting", hostfleetv1alpha1.ReasonReleasing
	}
	return r
}

func claimsFlags(fs *pflag.FlagSet) func(context.Context, *Env, []string) error {
	all := fs.BoolP("all-namespaces", "A", false, "claims of every namespace you may read")
	output := fs.StringP("output", "o", "", "wide, json or yaml")
	watchFlag := fs.BoolP("watch", "w", false, "after the list, print each claim again when it changes")
	return func(ctx context.Context, env *Env, args []string) error {
		if len(args) > 0 {
			return fmt.Errorf("claims takes no argument (got %q): `kubectl hostfleet why %s` explains one claim", args[0], args[0])
		}
		switch *output {
		case "", "wide", "json", "yaml":
		default:
			return fmt.Errorf("-o %s: use wide, json or yaml", *output)
		}
		ns := env.Namespace
		if *all {
			ns = ""
		}
		return claims(ctx, env, ns, *output, *watchFlag)
	}
}

func claims(ctx context.Context, env *Env, ns, output string, follow bool) error {
	var list metal3api.HostClaimList
	if err := env.Client.List(ctx, &list, client.InNamespace(ns)); err != nil {
		return explain(err, "list", "hostclaims", ns)
	}
	tenants := tenantsByNamespace(ctx, env.Client)
	rows := make([]Row, 0, len(list.Items))
	for i := range list.Items {
		rows = append(rows, RowOf(&list.Items[i], tenants))
	}
	slices.SortFunc(rows, func(a, b Row) int { return strings.Compare(a.Namespace+"/"+a.Name, b.Namespace+"/"+b.Name) })
	switch output {
	case "json":
		b, err := json.MarshalIndent(rows, "", "  ")
		if err != nil {
			return err
		}
		_, err = fmt.Fprintln(env.Out, string(b))
		return err
	case "yaml":
		b, err := yaml.Marshal(rows)
		if err != nil {
			return err
		}
		_, err = env.Out.Write(b)
		return err
	}
	if len(rows) == 0 && !follow {
		where := "namespace " + ns
		if ns == "" {
			where = "any namespace you may read"
		}
		_, err := fmt.Fprintf(env.Out, "No HostClaims in %s.\n", where)
		return err
	}
	tw := tabwriter.NewWriter(env.Out, 0, 4, 3, ' ', 0)
	printHeader(tw, output == "wide")
	for _, r := range rows {
		printRow(tw, r, output == "wide")
	}
	if err := tw.Flush(); err != nil || !follow {
		return err
	}
	return watchClaims(ctx, env, ns, list.ResourceVersion, tenants, output == "wide")
}

// watchClaims prints a claim's row each time it changes, until ctx ends.
func watchClaims(ctx context.Context, env *Env, ns, rv string, tenants map[string]string, wide bool) error {
	w, err := env.Client.Watch(ctx, &metal3api.HostClaimList{}, client.InNamespace(ns), &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: rv}})
	if err != nil {
		return explain(err, "watch", "hostclaims", ns)
	}
	defer w.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-w.ResultChan():
			if !ok {
				return fmt.Errorf("the hub closed the watch: run the command again")
			}
			c, isClaim := ev.Object.(*metal3api.HostClaim)
			if !isClaim || ev.Type == watch.Bookmark {
				continue
			}
			r := RowOf(c, tenants)
			if ev.Type == watch.Deleted {
				r.Ready, r.Reason = "Deleted", ""
			}
			tw := tabwriter.NewWriter(env.Out, 0, 4, 3, ' ', 0)
			printRow(tw, r, wide)
			if err := tw.Flush(); err != nil {
				return err
			}
		}
	}
}

func printHeader(w io.Writer, wide bool) {
	h := "NAMESPACE\tCLAIM\tTENANT\tCLUSTER\tHOST\tPOWER\tREADY\tREASON\tAGE"
	if wide {
		h += "\tKIND\tMESSAGE"
	}
	fmt.Fprintln(w, h)
}

func printRow(w io.Writer, r Row, wide bool) {
	line := strings.Join([]string{r.Namespace, r.Name, dash(r.Tenant), dash(r.Cluster), dash(r.Host), r.Power, r.Ready, dash(r.Reason),
		duration.HumanDuration(time.Since(r.Created))}, "\t")
	if wide {
		line += "\t" + r.Kind + "\t" + dash(r.Message)
	}
	fmt.Fprintln(w, line)
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// tenantsByNamespace maps tenant namespaces to their tenants, from the
// namespaces' hostfleet.io/tenant label: empty for a caller who may not
// list namespaces (a tenant admin), whose rows then show no tenant.
func tenantsByNamespace(ctx context.Context, c client.Client) map[string]string {
	var list corev1.NamespaceList
	out := map[string]string{}
	if err := c.List(ctx, &list, client.HasLabels{hostfleetv1alpha1.LabelTenant}); err != nil {
		return out
	}
	for _, ns := range list.Items {
		out[ns.Name] = ns.Labels[hostfleetv1alpha1.LabelTenant]
	}
	return out
}
