package manifests_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/hostfleet/hostfleet/e2e/harness/planes"
	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
)

// The HostClaim CRD the hub installs prints where a claim runs, on which
// host, its power, Ready and why: what `kubectl get hostclaims` shows,
// read as the server-side Table kubectl asks for.
func TestHostClaimColumns(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	f := planes.ForTest(t, "hub")
	c := f.Plane("hub").Client
	g.Expect(c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "tenant-a"}})).To(Succeed())
	claims := []struct {
		name, cluster, host string
		on                  bool
		ready               metav1.ConditionStatus
		reason              string
		remote              bool
	}{
		{"bound", "infra-1", "server-0", true, metav1.ConditionTrue, hostfleetv1alpha1.ReasonReady, false},
		{"waiting", "infra-2", "", false, metav1.ConditionFalse, hostfleetv1alpha1.ReasonNoHostAvailable, false},
		{"forwarded", "edge", "server-9", true, metav1.ConditionTrue, hostfleetv1alpha1.ReasonReady, true},
	}
	for _, tc := range claims {
		labels := map[string]string{hostfleetv1alpha1.LabelCluster: tc.cluster}
		if tc.remote {
			labels[hostfleetv1alpha1.LabelKind] = hostfleetv1alpha1.KindRemote
		}
		claim := &metal3api.HostClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant-a", Name: tc.name, Labels: labels},
			Spec: metal3api.HostClaimSpec{PoweredOn: tc.on}}
		g.Expect(c.Create(ctx, claim)).To(Succeed())
		claim.Status.PoweredOn = tc.on
		if tc.host != "" {
			claim.Status.BareMetalHost = &metal3api.ObjectReference{Namespace: "hosts", Name: tc.host}
		}
		claim.Status.Conditions = []metav1.Condition{{Type: hostfleetv1alpha1.ConditionReady, Status: tc.ready, Reason: tc.reason,
			Message: "m", LastTransitionTime: metav1.Now()}}
		g.Expect(c.Status().Update(ctx, claim)).To(Succeed())
	}

	table := serverTable(t, f.Plane("hub").Config, "/apis/metal3.io/v1alpha1/namespaces/tenant-a/hostclaims")
	var names []string
	for _, col := range table.ColumnDefinitions {
		names = append(names, col.Name)
	}
	g.Expect(names).To(Equal([]string{"Name", "Cluster", "Host", "Power", "Ready", "Reason", "Age"}))
	rows := map[string][]any{}
	for _, r := range table.Rows {
		rows[r.Cells[0].(string)] = r.Cells[1:6]
	}
	g.Expect(rows).To(Equal(map[string][]any{
		"bound": {"infra-1", "server-0", true, "True", "Ready"},
		// status.poweredOn is omitted when false: kubectl prints an empty cell.
		"waiting":   {"infra-2", nil, nil, "False", "NoBareMetalHostAvailable"},
		"forwarded": {"edge", "server-9", true, "True", "Ready"},
	}))
}

// serverTable GETs path as the Table kubectl asks the API server for.
func serverTable(t *testing.T, cfg *rest.Config, path string) *metav1.Table {
	t.Helper()
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	body, err := cs.CoreV1().RESTClient().Get().AbsPath(path).
		SetHeader("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io").DoRaw(ctx)
	if err != nil {
		t.Fatalf("GET %s: %v: %s", path, err, body)
	}
	table := &metav1.Table{}
	if err := json.Unmarshal(body, table); err != nil {
		t.Fatalf("decode the table: %v", err)
	}
	return table
}
