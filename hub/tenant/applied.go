package tenant

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// applied remembers what the controller last applied of each object and the
// resourceVersion the API server answered. A Tenant is reconciled at each
// claim count (ClaimCountDelay) and its agents' RoleBinding names two
// subjects per cluster: applied again each time, at 3 500 clusters, that
// one binding cost the API server more than a claim's own writes (make
// bench-scale). An object is applied again when what the Tenant wants of
// it changed, or when it is no longer at the version the last apply left
// (changed or deleted by someone else, or never applied by this process).
type applied struct {
	mu   sync.Mutex
	last map[string]appliedAt
}

type appliedAt struct {
	sum [sha256.Size]byte
	rv  string
}

func appliedKey(u *unstructured.Unstructured) string {
	return u.GroupVersionKind().String() + "/" + u.GetNamespace() + "/" + u.GetName()
}

func sum(u *unstructured.Unstructured) ([sha256.Size]byte, error) {
	raw, err := json.Marshal(u.Object)
	if err != nil {
		return [sha256.Size]byte{}, err
	}
	return sha256.Sum256(raw), nil
}

// current reports whether u, as the Tenant wants it, is what the last
// apply wrote and the object is still at the version that apply left, as
// read (metadata only) through c.
func (a *applied) current(ctx context.Context, c client.Reader, u *unstructured.Unstructured) (bool, error) {
	s, err := sum(u)
	if err != nil {
		return false, err
	}
	a.mu.Lock()
	last, ok := a.last[appliedKey(u)]
	a.mu.Unlock()
	if !ok || last.sum != s || last.rv == "" {
		return false, nil
	}
	m := &metav1.PartialObjectMetadata{}
	m.SetGroupVersionKind(u.GroupVersionKind())
	if err := c.Get(ctx, client.ObjectKey{Namespace: u.GetNamespace(), Name: u.GetName()}, m); err != nil {
		return false, client.IgnoreNotFound(err)
	}
	return m.ResourceVersion == last.rv, nil
}

// record remembers that want (as the Tenant wanted it) was applied and
// left the object at resourceVersion rv.
func (a *applied) record(want *unstructured.Unstructured, rv string) error {
	s, err := sum(want)
	if err != nil {
		return err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.last == nil {
		a.last = map[string]appliedAt{}
	}
	a.last[appliedKey(want)] = appliedAt{sum: s, rv: rv}
	return nil
}
