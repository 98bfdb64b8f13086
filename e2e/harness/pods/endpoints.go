//go:build linux

package pods

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
)

// managedBy marks the EndpointSlices the runner writes.
const managedBy = "pods.e2e.hostfleet.io"

// reconcileService keeps one EndpointSlice per selecting Service, listing the
// runner's pods that match at their loopback addresses, as the EndpointSlice
// controller does with pod IPs. The address type is FQDN: IPv4 slices refuse
// loopback addresses.
func (r *Runner) reconcileService(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	svc := &corev1.Service{}
	if err := r.client.Get(ctx, req.NamespacedName, svc); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if len(svc.Spec.Selector) == 0 || svc.DeletionTimestamp != nil {
		return ctrl.Result{}, nil
	}
	sel := labels.SelectorFromSet(svc.Spec.Selector)
	var matched []*pod
	for _, p := range r.podsIn(svc.Namespace) {
		p.mu.Lock()
		ok := sel.Matches(labels.Set(p.obj.Labels))
		p.mu.Unlock()
		if ok {
			matched = append(matched, p)
		}
	}
	if len(matched) == 0 {
		return ctrl.Result{RequeueAfter: 2 * time.Second}, nil
	}
	slice := &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Namespace: svc.Namespace, Name: svc.Name + "-pods"}}
	_, err := controllerutil.CreateOrUpdate(ctx, r.direct, slice, func() error {
		slice.Labels = map[string]string{
			discoveryv1.LabelServiceName: svc.Name,
			discoveryv1.LabelManagedBy:   managedBy,
		}
		// Loopback addresses are refused in IPv4 slices; as an FQDN the
		// address passes validation, and the API server dials it as the IP
		// it is (see docs/e2e-local.md).
		slice.AddressType = discoveryv1.AddressTypeFQDN
		var eps []discoveryv1.Endpoint
		for _, p := range matched {
			eps = append(eps, discoveryv1.Endpoint{
				Addresses:  []string{p.ip},
				Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(p.ready())},
				TargetRef:  &corev1.ObjectReference{Kind: "Pod", Namespace: p.ns, Name: p.name},
			})
		}
		slice.Endpoints = eps
		slice.Ports = nil
		for _, sp := range svc.Spec.Ports {
			slice.Ports = append(slice.Ports, discoveryv1.EndpointPort{
				Name: ptr.To(sp.Name), Port: ptr.To(targetPort(sp, matched[0])), Protocol: ptr.To(corev1.ProtocolTCP),
			})
		}
		return controllerutil.SetOwnerReference(svc, slice, r.client.Scheme())
	})
	if apierrors.IsConflict(err) {
		err = nil
	}
	if err != nil {
		r.logf("service %s: endpoints: %v", req, err)
	}
	return ctrl.Result{RequeueAfter: 2 * time.Second}, err
}

// targetPort is the port a Service port reaches on a pod: its targetPort,
// looked up among the containers' ports when named, else the port itself.
func targetPort(sp corev1.ServicePort, p *pod) int32 {
	switch {
	case sp.TargetPort.Type == intstr.String:
		for _, c := range p.containers {
			if n, err := portNumber(c.spec, sp.TargetPort); err == nil {
				return int32(n)
			}
		}
	case sp.TargetPort.IntValue() != 0:
		return int32(sp.TargetPort.IntValue())
	}
	return sp.Port
}
