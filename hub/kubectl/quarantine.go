package kubectl

import (
	"context"
	"errors"
	"fmt"
	"text/tabwriter"
	"time"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	"github.com/spf13/pflag"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hostfleet/hostfleet/hub/api/healing"
	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
)

func quarantinedFlags(fs *pflag.FlagSet) func(context.Context, *Env, []string) error {
	all := fs.BoolP("all-namespaces", "A", false, "hosts of every namespace")
	return func(ctx context.Context, env *Env, args []string) error {
		if len(args) != 0 {
			return errors.New("quarantined takes no argument: kubectl hostfleet quarantined [-n NS | -A]")
		}
		ns := env.Namespace
		if *all {
			ns = ""
		}
		return quarantined(ctx, env, ns)
	}
}

// quarantined lists the hosts the agent quarantined after replacing them
// behind their claims: when, for which claim, why, and whether each was
// confirmed off.
func quarantined(ctx context.Context, env *Env, ns string) error {
	var hosts metal3api.BareMetalHostList
	if err := env.Client.List(ctx, &hosts, client.InNamespace(ns)); err != nil {
		return explain(err, "list", "baremetalhosts", ns)
	}
	w := tabwriter.NewWriter(env.Out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "HOST\tSINCE\tCLAIM\tREASON\tFENCED\tSTATE")
	n := 0
	for i := range hosts.Items {
		h := &hosts.Items[i]
		q, ok, err := healing.QuarantineOf(h.Annotations)
		if !ok {
			continue
		}
		since := q.Since.UTC().Format(time.RFC3339)
		if err != nil {
			since = "unreadable"
		}
		n++
		fmt.Fprintf(w, "%s/%s\t%s\t%s\t%s\t%t\t%s\n", h.Namespace, h.Name, since, q.Claim, q.Reason, q.Fenced, h.Status.Provisioning.State)
	}
	if n == 0 {
		_, err := fmt.Fprintln(env.Out, "no quarantined hosts")
		return err
	}
	return w.Flush()
}

func returnFlags(*pflag.FlagSet) func(context.Context, *Env, []string) error {
	return func(ctx context.Context, env *Env, args []string) error {
		if len(args) != 1 {
			return errors.New("return-host takes one host: kubectl hostfleet return-host HOST [-n NS]")
		}
		return returnHost(ctx, env, args[0])
	}
}

// returnHost returns a quarantined host to the pool: it removes
// hostfleet.io/quarantined, with the host's resourceVersion. Its release
// (deprovisioning, and the erase its last claim's tenant asks) completes
// as for any released host before it is bound again.
func returnHost(ctx context.Context, env *Env, name string) error {
	h := &metal3api.BareMetalHost{}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: env.Namespace, Name: name}, h); err != nil {
		return explain(err, "get", "baremetalhosts", env.Namespace)
	}
	q, ok, _ := healing.QuarantineOf(h.Annotations)
	if !ok {
		return fmt.Errorf("host %s/%s is not quarantined (no %s)", h.Namespace, h.Name, hostfleetv1alpha1.AnnotationQuarantined)
	}
	orig := h.DeepCopy()
	delete(h.Annotations, hostfleetv1alpha1.AnnotationQuarantined)
	if err := env.Client.Patch(ctx, h, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("return host %s/%s: %w", h.Namespace, h.Name, err)
	}
	_, err := fmt.Fprintf(env.Out, "host %s/%s returned to the pool (quarantined %s for claim %s: %s); it is bound again once released and erased\n",
		h.Namespace, h.Name, q.Since.UTC().Format(time.RFC3339), q.Claim, q.Reason)
	return err
}
