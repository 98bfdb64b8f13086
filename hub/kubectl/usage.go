package kubectl

import (
	"context"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/spf13/pflag"

	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
	"github.com/hostfleet/hostfleet/hub/usage"
)

func usageFlags(fs *pflag.FlagSet) func(context.Context, *Env, []string) error {
	tenant := fs.String("tenant", "", "only this tenant")
	since := fs.String("since", "", "from this UTC day on (YYYY-MM-DD; a month the record has compacted counts whole)")
	return func(ctx context.Context, env *Env, args []string) error {
		if len(args) > 0 {
			return fmt.Errorf("usage takes no argument (got %q): kubectl hostfleet usage [--tenant NAME] [--since YYYY-MM-DD]", args[0])
		}
		var from time.Time
		if *since != "" {
			t, err := time.Parse("2006-01-02", *since)
			if err != nil {
				return fmt.Errorf("--since %q is not a day: give YYYY-MM-DD, such as 2026-11-01", *since)
			}
			from = t
		}
		return printUsage(ctx, env, *tenant, from)
	}
}

// printUsage prints host-hours per tenant, class and cluster from the
// clusters' UsageLedgers: what the hub counted.
func printUsage(ctx context.Context, env *Env, tenant string, since time.Time) error {
	var records hostfleetv1alpha1.UsageLedgerList
	if err := env.Client.List(ctx, &records); err != nil {
		return fmt.Errorf("usage is a hub administrator's view: %w", explain(err, "list", "usageledgers", ""))
	}
	var tenants hostfleetv1alpha1.TenantList
	if err := env.Client.List(ctx, &tenants); err != nil {
		return explain(err, "list", "tenants", "")
	}
	tw := tabwriter.NewWriter(env.Out, 0, 4, 3, ' ', 0)
	fmt.Fprintln(tw, "TENANT\tCLASS\tCLUSTER\tHOST-HOURS\tSECONDS")
	for _, t := range usage.Totals(records.Items, tenants.Items, time.Now(), since) {
		if tenant != "" && t.Tenant != tenant {
			continue
		}
		class := t.Class
		if class == usage.AllHosts {
			class = "(all)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%.2f\t%d\n", t.Tenant, class, t.Cluster, float64(t.Seconds)/3600, t.Seconds)
	}
	return tw.Flush()
}
