package kubectl

import (
	"context"
	"errors"
	"fmt"
	"time"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	"github.com/spf13/pflag"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
)

func extendFlags(fs *pflag.FlagSet) func(context.Context, *Env, []string) error {
	by := fs.Duration("for", 0, "how much longer the lease runs, a Go duration such as 2h")
	return func(ctx context.Context, env *Env, args []string) error {
		if len(args) != 1 || *by <= 0 {
			return errors.New("extend takes one claim and a positive --for: kubectl hostfleet extend CLAIM --for 2h [-n NAMESPACE]")
		}
		return extend(ctx, env, args[0], *by)
	}
}

// Extended is a lease's end moved later by d; an error says why a claim's
// lease cannot be extended. Pure.
func Extended(c *metal3api.HostClaim, d time.Duration) (time.Time, error) {
	if c.Annotations[hostfleetv1alpha1.AnnotationReleasedBy] != "" || !c.DeletionTimestamp.IsZero() {
		return time.Time{}, fmt.Errorf("claim %s/%s is being released: its lease cannot be extended; create a new claim", c.Namespace, c.Name)
	}
	v := c.Annotations[hostfleetv1alpha1.AnnotationLeaseUntil]
	if v == "" {
		return time.Time{}, fmt.Errorf("claim %s/%s has no lease end (%s), so nothing to extend; the hub writes one within seconds of a %s",
			c.Namespace, c.Name, hostfleetv1alpha1.AnnotationLeaseUntil, hostfleetv1alpha1.AnnotationLeaseFor)
	}
	until, err := time.Parse(time.RFC3339, v)
	if err != nil {
		return time.Time{}, fmt.Errorf("claim %s/%s: %s %q is not an RFC 3339 time: ask the hub's administrator to fix it", c.Namespace, c.Name,
			hostfleetv1alpha1.AnnotationLeaseUntil, v)
	}
	return until.Add(d).UTC(), nil
}

// extend moves a claim's lease end later. Admission checks the tenant's
// cap and says how far it allows.
func extend(ctx context.Context, env *Env, name string, d time.Duration) error {
	c := &metal3api.HostClaim{}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: env.Namespace, Name: name}, c); err != nil {
		if apierrors.IsNotFound(err) {
			return fmt.Errorf("no HostClaim %s in namespace %s: `kubectl hostfleet claims -n %s` lists them", name, env.Namespace, env.Namespace)
		}
		return explain(err, "get", "hostclaims", env.Namespace)
	}
	was := c.Annotations[hostfleetv1alpha1.AnnotationLeaseUntil]
	until, err := Extended(c, d)
	if err != nil {
		return err
	}
	orig := c.DeepCopy()
	c.Annotations[hostfleetv1alpha1.AnnotationLeaseUntil] = until.Format(time.RFC3339)
	// Locked to what was read: the end moves from the one printed.
	if err := env.Client.Patch(ctx, c, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{})); err != nil {
		switch {
		case apierrors.IsConflict(err):
			return fmt.Errorf("claim %s/%s changed while extending it: run the command again", c.Namespace, c.Name)
		case apierrors.IsForbidden(err) || apierrors.IsInvalid(err):
			return fmt.Errorf("the lease of %s/%s cannot end at %s: %w", c.Namespace, c.Name, until.Format(time.RFC3339), err)
		}
		return explain(err, "patch", "hostclaims", env.Namespace)
	}
	_, err = fmt.Fprintf(env.Out, "HostClaim %s/%s: the lease now ends at %s (was %s)\n", c.Namespace, c.Name, until.Format(time.RFC3339), was)
	return err
}
