package planes

import (
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	addonv1beta1 "open-cluster-management.io/api/addon/v1beta1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"
	workv1 "open-cluster-management.io/api/work/v1"

	"github.com/hostfleet/hostfleet/internal/scheme"
	operatorv1alpha1 "github.com/hostfleet/hostfleet/operator/api/v1alpha1"
)

// Scheme knows every type a test may read or write on a plane: Kubernetes',
// CRDs, metal3, OCM and Hostfleet's (the operator's included).
func Scheme() *runtime.Scheme {
	return scheme.New(apiextensionsv1.AddToScheme, clusterv1.Install, clusterv1beta1.Install, clusterv1beta2.Install, workv1.Install,
		addonv1alpha1.Install, addonv1beta1.Install, operatorv1alpha1.AddToScheme)
}
