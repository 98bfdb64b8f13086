package controller_test

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/hostfleet/hostfleet/operator/controller"
)

func TestLeaderOf(t *testing.T) {
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	lease := func(holder string, renewed time.Duration) *coordinationv1.Lease {
		return &coordinationv1.Lease{Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To(holder), LeaseDurationSeconds: ptr.To[int32](15),
			RenewTime: ptr.To(metav1.NewMicroTime(now.Add(-renewed)))}}
	}
	for _, tt := range []struct {
		name   string
		lease  *coordinationv1.Lease
		leader string
		says   string
	}{
		{"no Lease yet", nil, "", "no replica has led yet (no leader Lease): nothing is placed until one does"},
		{"released", lease("", 0), "", "no replica holds the leader Lease: nothing is placed until one does"},
		{"held", lease("hostfleet-hub-6c9f7d-x2x4q_1b2c3d", 2*time.Second), "hostfleet-hub-6c9f7d-x2x4q", "hostfleet-hub-6c9f7d-x2x4q leads"},
		{"expired: the leader died", lease("hostfleet-hub-6c9f7d-x2x4q_1b2c3d", 20*time.Second), "",
			"hostfleet-hub-6c9f7d-x2x4q stopped renewing the leader Lease, which expired at 2026-11-25T11:59:55Z: a standby takes it over, or none runs"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			leader, says := controller.LeaderOf(tt.lease, now)
			NewWithT(t).Expect([]string{leader, says}).To(Equal([]string{tt.leader, tt.says}))
		})
	}
}
