package demo

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
)

// nodeLabels registers, on the workload cluster apps, the Nodes of web-1
// and db-1 as kubelet would once their hosts booted (a Cluster API
// providerID naming the claim, the labels-pending gate), shows the host
// labels apps' agent put on them, then moves web-1's host to another rack
// on infra-1 and shows the Node follow.
func nodeLabels(ctx context.Context, hub, infra1, workload client.Client, timeout time.Duration, say func(string, ...any)) error {
	claims := []string{"web-1", "db-1"}
	for _, c := range claims {
		if err := create(ctx, workload, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: c + "-node",
			Labels: map[string]string{"kubernetes.io/hostname": c + "-node", hostfleetv1alpha1.LabelLabelsPending: "true"}},
			Spec: corev1.NodeSpec{ProviderID: "metal3://tenant-acme/" + c + "/m3m-0"}}); err != nil {
			return err
		}
	}
	say("Nodes web-1-node and db-1-node register on apps (providerID metal3://tenant-acme/<claim>/…, hostfleet.io/labels-pending):")
	for _, c := range claims {
		node := &corev1.Node{}
		claim := &metal3api.HostClaim{}
		if err := poll(ctx, timeout, func() (bool, error) {
			if err := workload.Get(ctx, client.ObjectKey{Name: c + "-node"}, node); err != nil {
				return false, err
			}
			if err := hub.Get(ctx, client.ObjectKey{Namespace: "tenant-acme", Name: c}, claim); err != nil {
				return false, err
			}
			_, pending := node.Labels[hostfleetv1alpha1.LabelLabelsPending]
			return !pending && meta.IsStatusConditionTrue(claim.Status.Conditions, hostfleetv1alpha1.ConditionNodeLabelsSynced), nil
		}); err != nil {
			return fmt.Errorf("%s's Node not labelled: %w", c, err)
		}
		say("  %-10s %s", node.Name, exampleLabels(node.Labels))
		say("             %s", meta.FindStatusCondition(claim.Status.Conditions, hostfleetv1alpha1.ConditionNodeLabelsSynced).Message)
	}
	claim := &metal3api.HostClaim{}
	if err := hub.Get(ctx, client.ObjectKey{Namespace: "tenant-acme", Name: "web-1"}, claim); err != nil {
		return err
	}
	host := claim.Status.BareMetalHost
	if host == nil {
		return fmt.Errorf("web-1 has no host")
	}
	moved := time.Now()
	patch := client.RawPatch("application/merge-patch+json", []byte(`{"metadata":{"labels":{"example.com/rack":"r7"}}}`))
	if err := infra1.Patch(ctx, &metal3api.BareMetalHost{ObjectMeta: metav1.ObjectMeta{Namespace: host.Namespace, Name: host.Name}}, patch); err != nil {
		return err
	}
	node := &corev1.Node{}
	if err := poll(ctx, timeout, func() (bool, error) {
		if err := workload.Get(ctx, client.ObjectKey{Name: "web-1-node"}, node); err != nil {
			return false, err
		}
		return node.Labels["example.com/rack"] == "r7", nil
	}); err != nil {
		return fmt.Errorf("web-1-node did not follow its host: %w", err)
	}
	say("Host %s/%s on infra-1 moved to rack r7: web-1-node has example.com/rack=r7 %s later.", host.Namespace, host.Name,
		time.Since(moved).Round(10*time.Millisecond))
	return nil
}

func exampleLabels(labels map[string]string) string {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(labels)) {
		if strings.HasPrefix(k, "example.com/") {
			out = append(out, k+"="+labels[k])
		}
	}
	return strings.Join(out, " ")
}
