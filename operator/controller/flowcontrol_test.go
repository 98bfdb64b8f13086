package controller_test

import (
	"context"

	. "github.com/onsi/gomega"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
	"github.com/hostfleet/hostfleet/operator/controller"
)

// expectFlowSchemas: agents (the CSR driver's shared group) have a priority
// level of their own on the hub API server, the hub's ServiceAccount
// workload-high.
func expectFlowSchemas(g Gomega, hub client.Client) {
	ctx := context.Background()
	agents := &flowcontrolv1.FlowSchema{}
	g.Expect(hub.Get(ctx, client.ObjectKey{Name: "hostfleet-agents"}, agents)).To(Succeed())
	g.Expect(agents.Spec.PriorityLevelConfiguration.Name).To(Equal("hostfleet-agents"))
	g.Expect(agents.Spec.Rules[0].Subjects[0].Group.Name).To(Equal(hostfleetv1alpha1.AgentSharedGroup))
	g.Expect(hub.Get(ctx, client.ObjectKey{Name: "hostfleet-agents"}, &flowcontrolv1.PriorityLevelConfiguration{})).To(Succeed())
	hubFlow := &flowcontrolv1.FlowSchema{}
	g.Expect(hub.Get(ctx, client.ObjectKey{Name: "hostfleet-hub"}, hubFlow)).To(Succeed())
	g.Expect(hubFlow.Spec.PriorityLevelConfiguration.Name).To(Equal("workload-high"))
	g.Expect(hubFlow.Spec.Rules[0].Subjects[0].ServiceAccount).To(Equal(&flowcontrolv1.ServiceAccountSubject{Namespace: "hostfleet-system", Name: controller.HubName}))
}

// expectNoFlowSchemas: an uninstalled hub leaves none of them.
func expectNoFlowSchemas(g Gomega, hub client.Client) {
	ctx := context.Background()
	for name, obj := range map[string]client.Object{
		"hostfleet-agents": &flowcontrolv1.FlowSchema{}, "hostfleet-hub": &flowcontrolv1.FlowSchema{},
	} {
		g.Expect(hub.Get(ctx, client.ObjectKey{Name: name}, obj)).To(Satisfy(apierrors.IsNotFound), name)
	}
	g.Expect(hub.Get(ctx, client.ObjectKey{Name: "hostfleet-agents"}, &flowcontrolv1.PriorityLevelConfiguration{})).To(Satisfy(apierrors.IsNotFound))
}
