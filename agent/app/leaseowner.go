package app

import (
	"context"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	ctrl "sigs.k8s.io/controller-runtime"
)

// leaseOwner makes the agent's Leases belong to a ServiceAccount in their
// namespace: the agent pod's, which the add-on's ManifestWork owns. Disabling
// the add-on then removes the Leases too, even where the namespace stays (a
// namespace shared with other add-ons). Leader election and the lease
// updater create the Leases, so the owner is added once they exist.
type leaseOwner struct {
	client         kubernetes.Interface
	namespace      string
	serviceAccount string
	leases         []string
	every          time.Duration
}

func (l leaseOwner) NeedLeaderElection() bool { return false }

func (l leaseOwner) Start(ctx context.Context) error {
	log := ctrl.LoggerFrom(ctx).WithName("lease-owner")
	tick := time.NewTicker(l.every)
	defer tick.Stop()
	last := ""
	for {
		if done, err := l.own(ctx); err != nil {
			if err.Error() != last {
				log.Info("cannot make the ServiceAccount the owner of the agent's Leases yet; they may outlive the add-on", "serviceAccount", l.serviceAccount, "error", err.Error())
			}
			last = err.Error()
		} else if done {
			return nil
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}

// own sets the owner on every Lease that exists; done once all have it.
func (l leaseOwner) own(ctx context.Context) (bool, error) {
	sa, err := l.client.CoreV1().ServiceAccounts(l.namespace).Get(ctx, l.serviceAccount, metav1.GetOptions{})
	if err != nil {
		return false, err
	}
	ref := metav1.OwnerReference{APIVersion: "v1", Kind: "ServiceAccount", Name: sa.Name, UID: sa.UID}
	done := true
	for _, name := range l.leases {
		lease, err := l.client.CoordinationV1().Leases(l.namespace).Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			done = false
			continue
		}
		if err != nil {
			return false, err
		}
		owned := false
		for _, o := range lease.OwnerReferences {
			owned = owned || o.UID == sa.UID
		}
		if owned {
			continue
		}
		lease.OwnerReferences = append(lease.OwnerReferences, ref)
		if _, err := l.client.CoordinationV1().Leases(l.namespace).Update(ctx, lease, metav1.UpdateOptions{}); err != nil {
			return false, err
		}
	}
	return done, nil
}
