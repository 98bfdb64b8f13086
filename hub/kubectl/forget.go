package kubectl

import (
	"context"
	"errors"
	"fmt"
	"slices"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	"github.com/spf13/pflag"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
)

func forgetFlags(*pflag.FlagSet) func(context.Context, *Env, []string) error {
	return func(ctx context.Context, env *Env, args []string) error {
		if len(args) != 1 {
			return errors.New("forget-cluster takes one cluster: kubectl hostfleet forget-cluster CLUSTER")
		}
		return forget(ctx, env, args[0])
	}
}

// Forgettable is whether the claims of a cluster may be let go: not while
// its ManagedCluster is Available (its agent releases them itself). A
// cluster the hub no longer has (nil) is forgettable. Pure.
func Forgettable(cluster string, mc *clusterv1.ManagedCluster) error {
	if mc != nil && meta.IsStatusConditionTrue(mc.Status.Conditions, clusterv1.ManagedClusterConditionAvailable) {
		return fmt.Errorf("cluster %s is Available: its agent releases the hosts of its claims itself; forget-cluster is for a cluster lost for good", cluster)
	}
	return nil
}

// forget lets go of the hub claims being deleted on a cluster lost for
// good: it removes the finalizers only that cluster's agent (or work
// agent) would remove. Nothing on any other cluster, and no claim that is
// not being deleted, is touched.
func forget(ctx context.Context, env *Env, cluster string) error {
	mc := &clusterv1.ManagedCluster{}
	switch err := env.Client.Get(ctx, client.ObjectKey{Name: cluster}, mc); {
	case apierrors.IsNotFound(err):
		mc = nil
	case err != nil:
		return explain(err, "get", "managedclusters", "")
	}
	if err := Forgettable(cluster, mc); err != nil {
		return err
	}
	var claims metal3api.HostClaimList
	if err := env.Client.List(ctx, &claims, client.MatchingLabels{hostfleetv1alpha1.LabelCluster: cluster}); err != nil {
		return explain(err, "list", "hostclaims", "")
	}
	let, stay := 0, 0
	for i := range claims.Items {
		c := &claims.Items[i]
		if c.DeletionTimestamp.IsZero() {
			stay++
			continue
		}
		orig := c.DeepCopy()
		c.Finalizers = slices.DeleteFunc(c.Finalizers, func(f string) bool {
			return f == hostfleetv1alpha1.AgentFinalizer || f == hostfleetv1alpha1.ForwarderFinalizer
		})
		if len(c.Finalizers) == len(orig.Finalizers) {
			continue
		}
		if err := env.Client.Patch(ctx, c, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{})); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("let go of claim %s/%s: %w", c.Namespace, c.Name, err)
		}
		let++
		if _, err := fmt.Fprintf(env.Out, "HostClaim %s/%s: let go (its host on %s is left as it is; %s's agent releases it if the cluster comes back)\n",
			c.Namespace, c.Name, cluster, cluster); err != nil {
			return err
		}
	}
	_, err := fmt.Fprintf(env.Out, "%s: %d claims being deleted let go; %d claims still placed there (delete them, then run this again)\n", cluster, let, stay)
	return err
}
