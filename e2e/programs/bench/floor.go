package main

import (
	"context"
	"fmt"
	"maps"
	"time"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hostfleet/hostfleet/e2e/harness/planes"
	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
)

// floorNS holds the floor's claims (hub) and hosts (infrastructure).
const floorNS = "floor"

// floorResult is what the three writes of a bound claim cost when nothing
// but them is done.
type floorResult struct {
	elapsed time.Duration
	used    map[string]time.Duration
}

// floor makes, from the same number of writers and with nothing else
// running, the three writes the agent makes for a claim bound on the first
// try, copied from a claim it bound (template, on the hub, and its host):
// the reservation (the claim's annotations, finalizer and labels), the bind
// (the host's consumerRef and annotations) and the confirmation (the claim's
// status), each with the object's resourceVersion, on n fresh claims and
// hosts read beforehand. Its rate is the most any agent making these three
// writes could bind on these planes: the agent's reads, cache and decisions
// cost nothing here. The claims count once the bench's watch sees them
// Ready, as in the binding run.
func floor(ctx context.Context, f *planes.Fleet, template client.ObjectKey, n, workers int) (floorResult, error) {
	hub, infra := f.Plane("hub").Client, f.Plane("infra-1").Client
	tc := &metal3api.HostClaim{}
	if err := hub.Get(ctx, template, tc); err != nil {
		return floorResult{}, fmt.Errorf("floor: template claim: %w", err)
	}
	if tc.Status.BareMetalHost == nil {
		return floorResult{}, fmt.Errorf("floor: template claim %s is not bound", template)
	}
	th := &metal3api.BareMetalHost{}
	if err := infra.Get(ctx, client.ObjectKey{Namespace: tc.Status.BareMetalHost.Namespace, Name: tc.Status.BareMetalHost.Name}, th); err != nil {
		return floorResult{}, fmt.Errorf("floor: template host: %w", err)
	}
	for _, c := range []client.Client{hub, infra} {
		if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: floorNS}}); err != nil {
			return floorResult{}, err
		}
	}
	if err := createHosts(ctx, infra, floorNS, n, workers); err != nil {
		return floorResult{}, err
	}
	if err := createClaims(ctx, hub, floorNS, n, workers, map[string]string{hostfleetv1alpha1.LabelCluster: "infra-1"}); err != nil {
		return floorResult{}, err
	}
	var claims metal3api.HostClaimList
	if err := hub.List(ctx, &claims, client.InNamespace(floorNS)); err != nil {
		return floorResult{}, err
	}
	var hosts metal3api.BareMetalHostList
	if err := infra.List(ctx, &hosts, client.InNamespace(floorNS)); err != nil {
		return floorResult{}, err
	}
	if len(claims.Items) != n || len(hosts.Items) != n {
		return floorResult{}, fmt.Errorf("floor: %d claims and %d hosts, want %d", len(claims.Items), len(hosts.Items), n)
	}
	watchBound, err := newClaimWatch(f.Plane("hub").Config, f.Scheme, floorNS, ready)
	if err != nil {
		return floorResult{}, err
	}
	usage := planeUsage(f, "hub", "infra-1")
	start := time.Now()
	// Only a failure stops the watch.
	failed := make(chan error, 1)
	go func() {
		if err := parallel(n, workers, func(i int) error {
			c, h := &claims.Items[i], &hosts.Items[i]
			orig := c.DeepCopy()
			c.Annotations = maps.Clone(tc.Annotations)
			c.Annotations[hostfleetv1alpha1.AnnotationReservedHost] = h.Namespace + "/" + h.Name
			c.Finalizers = tc.Finalizers
			c.Labels = maps.Clone(tc.Labels)
			if err := hub.Patch(ctx, c, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{})); err != nil {
				return fmt.Errorf("floor: reservation: %w", err)
			}
			origHost := h.DeepCopy()
			ref := *th.Spec.ConsumerRef
			ref.Namespace, ref.Name = c.Namespace, c.Name
			h.Spec.ConsumerRef = &ref
			h.Annotations = maps.Clone(th.Annotations)
			h.Annotations[hostfleetv1alpha1.AnnotationClaimUID] = string(c.UID)
			if err := infra.Patch(ctx, h, client.MergeFromWithOptions(origHost, client.MergeFromWithOptimisticLock{})); err != nil {
				return fmt.Errorf("floor: bind: %w", err)
			}
			orig = c.DeepCopy()
			c.Status = *tc.Status.DeepCopy()
			c.Status.BareMetalHost = &metal3api.ObjectReference{Namespace: h.Namespace, Name: h.Name}
			if err := hub.Status().Patch(ctx, c, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{})); err != nil {
				return fmt.Errorf("floor: confirmation: %w", err)
			}
			return nil
		}); err != nil {
			failed <- err
		}
	}()
	if err := watchBound.wait(ctx, n, 10*time.Minute, failed); err != nil {
		return floorResult{}, fmt.Errorf("floor: %w", err)
	}
	return floorResult{elapsed: time.Since(start), used: usage()}, nil
}
