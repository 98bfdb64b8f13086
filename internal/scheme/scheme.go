// Package scheme builds the runtime schemes of Hostfleet's processes: the
// types every one of them reads (Kubernetes', metal3's, Hostfleet's own),
// plus the ones a process adds.
package scheme

import (
	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"

	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
)

// New is a scheme with Kubernetes', metal3's and Hostfleet's types and
// those of add. It panics if a type cannot be added: a programming error.
func New(add ...func(*runtime.Scheme) error) *runtime.Scheme {
	s := runtime.NewScheme()
	for _, f := range append([]func(*runtime.Scheme) error{clientgoscheme.AddToScheme, metal3api.AddToScheme, hostfleetv1alpha1.AddToScheme}, add...) {
		utilruntime.Must(f(s))
	}
	return s
}
