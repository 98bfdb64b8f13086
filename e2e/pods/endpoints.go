//go:build linux

package pods

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/equality"
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
		// it is (see docs/testing.md).
		slice.AddressType = discoveryv1.AddressTypeFQDN
		var eps []discoveryv1.Endpoint
		for _, p := range matched {
			eps = append(eps, discoveryv1.Endpoint{
				Addresses:  []string{p.ip},
				Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(p.ready())},
				TargetRef:  &corev1.ObjectReference{Kind: "Pod", Namespace: p.ns, Name: p.name},
			})
		}
		var ports []discoveryv1.EndpointPort
		for _, sp := range svc.Spec.Ports {
			port := sp.TargetPort
			if port.Type == intstr.String || port.IntValue() == 0 {
				port = intstr.FromInt32(sp.Port)
				if sp.TargetPort.Type == intstr.String {
					if n, err := portNumber(matched[0].containers[0].spec, sp.TargetPort); err == nil {
						port = intstr.FromInt(n)
					}
				}
			}
			ports = append(ports, discoveryv1.EndpointPort{
				Name: ptr.To(sp.Name), Port: ptr.To(int32(port.IntValue())), Protocol: ptr.To(corev1.ProtocolTCP),
			})
		}
		if !equality.Semantic.DeepEqual(slice.Endpoints, eps) {
			slice.Endpoints = eps
		}
		if !equality.Semantic.DeepEqual(slice.Ports, ports) {
			slice.Ports = ports
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
