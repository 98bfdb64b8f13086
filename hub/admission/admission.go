// Package admission installs the hub's admission rules: ValidatingAdmission
// Policies, evaluated by the API server itself (no webhook server), shipped in
// manifests/policies. The per-tenant bindings of the claims policy, whose
// parameter is the Tenant, are made by the tenant controller.
package admission

import (
	"context"
	"fmt"
	"math"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
	"github.com/hostfleet/hostfleet/manifests"
)

// Install applies every policy and cluster-wide binding, as the identity of
// c, which the policies then exempt where the hub must act for everyone.
func Install(ctx context.Context, c client.Client) error {
	self := &authenticationv1.SelfSubjectReview{}
	if err := c.Create(ctx, self); err != nil {
		return fmt.Errorf("who is the hub (SelfSubjectReview): %w", err)
	}
	docs, err := manifests.PoliciesFor(self.Status.UserInfo.Username)
	if err != nil {
		return err
	}
	for _, doc := range docs {
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(doc, &u.Object); err != nil {
			return fmt.Errorf("parse policy: %w", err)
		}
		if err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(hostfleetv1alpha1.FieldManagerHub), client.ForceOwnership); err != nil {
			return fmt.Errorf("install %s %s: %w", u.GetKind(), u.GetName(), err)
		}
	}
	return nil
}

// Installer installs the policies when the manager starts.
type Installer struct{ Client client.Client }

// Start implements manager.Runnable: it installs the policies, retrying
// with backoff while the API server fails, so that a hub starting during an
// outage waits for it instead of exiting.
func (i *Installer) Start(ctx context.Context) error {
	log := ctrl.LoggerFrom(ctx).WithName("admission")
	backoff := wait.Backoff{Duration: time.Second, Factor: 2, Steps: math.MaxInt32, Cap: 30 * time.Second}
	err := wait.ExponentialBackoffWithContext(ctx, backoff, func(ctx context.Context) (bool, error) {
		if err := Install(ctx, i.Client); err != nil {
			log.Error(err, "installing the admission policies; retrying")
			return false, nil
		}
		return true, nil
	})
	if ctx.Err() != nil {
		return nil
	}
	return err
}

// NeedLeaderElection is false: installing is idempotent.
func (i *Installer) NeedLeaderElection() bool { return false }
