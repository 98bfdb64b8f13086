package app

import (
	"context"
	"fmt"
	"os"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// leaderLock is the agent's leader election lock: the Lease
// leaderElectionID(cluster) in the agent's namespace on the managed
// cluster, created owned by the agent's ServiceAccount (o.LeaseOwner) when
// it exists. The garbage collector removes the Lease with the add-on; a
// replica still running then creates it again, owned by the ServiceAccount
// that is gone, and the collector removes that one too (without the owner
// it would outlive the add-on). Nil without leader election.
func leaderLock(ctx context.Context, managedCfg *rest.Config, o *Options, renewDeadline time.Duration) (resourcelock.Interface, error) {
	if !o.LeaderElect {
		return nil, nil
	}
	cfg := rest.AddUserAgent(rest.CopyConfig(managedCfg), "leader-election")
	// A hung request must not cost the leadership (as controller-runtime).
	cfg.Timeout = max(renewDeadline/2, time.Second)
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("leader election client: %w", err)
	}
	host, err := os.Hostname()
	if err != nil {
		return nil, err
	}
	lease := metav1.ObjectMeta{Namespace: o.AgentNamespace, Name: leaderElectionID(o.ClusterName)}
	if o.LeaseOwner != "" {
		// Not there yet (or not readable): the lease owner sets it later.
		if sa, err := kube.CoreV1().ServiceAccounts(o.AgentNamespace).Get(ctx, o.LeaseOwner, metav1.GetOptions{}); err == nil {
			lease.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "ServiceAccount", Name: sa.Name, UID: sa.UID}}
		}
	}
	return ownedLease{&resourcelock.LeaseLock{LeaseMeta: lease, Client: kube.CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{Identity: host + "_" + string(uuid.NewUUID())}}}, nil
}

// ownedLease is a LeaseLock whose Lease is created with the lock's
// LeaseMeta owners (client-go's creates it with its name alone).
type ownedLease struct{ *resourcelock.LeaseLock }

// Create creates the Lease, owned, and reads it back into the lock, which
// updates what it last read.
func (l ownedLease) Create(ctx context.Context, ler resourcelock.LeaderElectionRecord) error {
	if len(l.LeaseMeta.OwnerReferences) == 0 {
		return l.LeaseLock.Create(ctx, ler)
	}
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: l.LeaseMeta.Namespace, Name: l.LeaseMeta.Name,
		Labels: l.Labels, OwnerReferences: l.LeaseMeta.OwnerReferences}, Spec: resourcelock.LeaderElectionRecordToLeaseSpec(&ler)}
	if _, err := l.Client.Leases(lease.Namespace).Create(ctx, lease, metav1.CreateOptions{}); err != nil {
		return err
	}
	_, _, err := l.LeaseLock.Get(ctx)
	return err
}
