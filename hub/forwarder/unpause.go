package forwarder

import (
	"context"
	"encoding/json"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/klog/v2"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
)

// unpauseTarget readies a work for its withdrawal: a target claim deleted
// while paused would wait for a pause nobody can lift, so the pause the
// work carries is taken off it first, and the work is withdrawn once its
// work agent has applied that (done). A work no agent has applied goes at
// once.
func (r *Reconciler) unpauseTarget(ctx context.Context, w *workv1.ManifestWork) (done bool, _ error) {
	for i := range w.Spec.Workload.Manifests {
		m := &w.Spec.Workload.Manifests[i]
		obj := map[string]any{}
		if err := json.Unmarshal(m.Raw, &obj); err != nil || obj["kind"] != "HostClaim" {
			continue
		}
		md, _ := obj["metadata"].(map[string]any)
		ann, _ := md["annotations"].(map[string]any)
		if _, paused := ann[hostfleetv1alpha1.AnnotationPaused]; !paused {
			break
		}
		delete(ann, hostfleetv1alpha1.AnnotationPaused)
		raw, err := json.Marshal(obj)
		if err != nil {
			return false, err
		}
		orig := w.DeepCopy()
		w.Spec.Workload.Manifests[i] = workv1.Manifest{RawExtension: runtime.RawExtension{Raw: raw}}
		if err := r.Client.Patch(ctx, w, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{})); err != nil {
			return false, fmt.Errorf("take the pause off ManifestWork %s: %w", klog.KObj(w), err)
		}
		return false, nil
	}
	applied := meta.FindStatusCondition(w.Status.Conditions, workv1.WorkApplied)
	return applied == nil || applied.ObservedGeneration >= w.Generation, nil
}
