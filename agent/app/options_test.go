package app

import (
	"testing"

	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"

	. "github.com/onsi/gomega"
	"github.com/spf13/pflag"
)

func TestOptions(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		wantErr []string
	}{
		{name: "minimal", args: []string{"--hub-kubeconfig=/h", "--cluster-name=infra-1"}},
		{name: "missing both", args: nil, wantErr: []string{"--hub-kubeconfig is required", "--cluster-name is required"}},
		{name: "bad cluster", args: []string{"--hub-kubeconfig=/h", "--cluster-name=Infra_1"}, wantErr: []string{`--cluster-name "Infra_1"`}},
		{name: "bad concurrency", args: []string{"--hub-kubeconfig=/h", "--cluster-name=a", "--concurrency=0"}, wantErr: []string{"--concurrency 0"}},
		{name: "bad leader election timing", args: []string{"--hub-kubeconfig=/h", "--cluster-name=a", "--leader-elect-lease-duration=5s"}, wantErr: []string{"--leader-elect-lease-duration 5s must exceed --leader-elect-renew-deadline 10s"}},
		{name: "bad retry", args: []string{"--hub-kubeconfig=/h", "--cluster-name=a", "--retry-after=1ms"}, wantErr: []string{"--retry-after 1ms"}},
		{name: "bad agent namespace", args: []string{"--hub-kubeconfig=/h", "--cluster-name=a", "--agent-namespace=Not_A_NS"}, wantErr: []string{"--agent-namespace"}},
		{name: "no leader election, any namespace", args: []string{"--hub-kubeconfig=/h", "--cluster-name=a", "--leader-elect=false", "--agent-namespace=Not_A_NS"}},
		{name: "bootstrap or managed, not both", args: []string{"--hub-kubeconfig=/h", "--cluster-name=a", "--managed-kubeconfig=/m", "--bootstrap-managed-kubeconfig=/b", "--hosting-namespace=ns", "--bmh-driver=none"},
			wantErr: []string{"exclude each other"}},
		{name: "hosted lease needs the hosting namespace", args: []string{"--hub-kubeconfig=/h", "--cluster-name=a", "--bootstrap-managed-kubeconfig=/b", "--bmh-driver=none"},
			wantErr: []string{"--hosting-namespace \"\" must be a namespace name"}},
		{name: "hosted without lease", args: []string{"--hub-kubeconfig=/h", "--cluster-name=a", "--bootstrap-managed-kubeconfig=/b", "--health-lease=false", "--bmh-driver=none"}},
		{name: "hosted BMC driver needs its namespaces", args: []string{"--hub-kubeconfig=/h", "--cluster-name=a", "--bootstrap-managed-kubeconfig=/b", "--health-lease=false"},
			wantErr: []string{"--bmc-namespaces is required in Hosted mode with the BMC driver on"}},
		{name: "hosted BMC driver in its namespaces", args: []string{"--hub-kubeconfig=/h", "--cluster-name=a", "--bootstrap-managed-kubeconfig=/b", "--health-lease=false", "--bmc-namespaces=hosts,edge"}},
		{name: "bad BMC namespace", args: []string{"--hub-kubeconfig=/h", "--cluster-name=a", "--bmc-namespaces=hosts,Bad_NS"}, wantErr: []string{`--bmc-namespaces: "Bad_NS"`}},
		{name: "host namespaces", args: []string{"--hub-kubeconfig=/h", "--cluster-name=a", "--host-namespaces=rack-1,rack-2"}},
		{name: "bad host namespace", args: []string{"--hub-kubeconfig=/h", "--cluster-name=a", "--host-namespaces=rack-1,Rack_2"}, wantErr: []string{`--host-namespaces: "Rack_2" is not a namespace name`}},
		{name: "short token", args: []string{"--hub-kubeconfig=/h", "--cluster-name=a", "--token-ttl=1m"}, wantErr: []string{"--token-ttl 1m0s"}},
		{name: "workload role", args: []string{"--hub-kubeconfig=/h", "--cluster-name=apps", "--role=workload", "--label-sync-interval=30s"}},
		{name: "hosted workload role drives no BMC", args: []string{"--hub-kubeconfig=/h", "--cluster-name=apps", "--role=workload", "--bootstrap-managed-kubeconfig=/b", "--health-lease=false"}},
		{name: "bad role", args: []string{"--hub-kubeconfig=/h", "--cluster-name=a", "--role=worker"}, wantErr: []string{`--role "worker" must be infrastructure or workload`}},
		{name: "workload role reads its tenant only", args: []string{"--hub-kubeconfig=/h", "--cluster-name=a", "--role=workload", "--claim-scope=all", "--label-sync-interval=10ms"},
			wantErr: []string{"--claim-scope must be tenants", "--label-sync-interval 10ms must be at least 1s"}},
		{name: "placed claim watch", args: []string{"--hub-kubeconfig=/h", "--cluster-name=a", "--claim-watch=placed"}},
		{name: "bad claim watch", args: []string{"--hub-kubeconfig=/h", "--cluster-name=a", "--claim-watch=labels"}, wantErr: []string{`--claim-watch (or $HOSTFLEET_CLAIM_WATCH) "labels" must be label or placed`}},
		{name: "erase", args: []string{"--hub-kubeconfig=/h", "--cluster-name=a", "--erase=Metadata", "--erase-image=https://images.example.com/erase.iso", "--erase-pxe"}},
		{name: "bad erase", args: []string{"--hub-kubeconfig=/h", "--cluster-name=a", "--erase=wipe", "--erase-image=file:///erase.iso", "--erase-timeout=1ms"},
			wantErr: []string{`--erase "wipe" must be None, Metadata or Full`, `--erase-image "file:///erase.iso" must be an http:// or https:// URL`, "--erase-timeout 1ms must be at least 1s"}},
		{name: "bad client limits", args: []string{"--hub-kubeconfig=/h", "--cluster-name=a", "--kube-api-qps=0", "--managed-kube-api-burst=0"},
			wantErr: []string{"--kube-api-qps 0 and --kube-api-burst 100 must be positive", "--managed-kube-api-qps 200 and --managed-kube-api-burst 0 must be positive"}},
		{name: "bad hub name", args: []string{"--hub-kubeconfig=/h", "--cluster-name=a", "--hub-name="}, wantErr: []string{"--hub-name"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			o := NewOptions()
			fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
			o.AddFlags(fs)
			g.Expect(fs.Parse(tt.args)).To(Succeed())
			errs := o.Validate()
			g.Expect(errs).To(HaveLen(len(tt.wantErr)))
			for i, want := range tt.wantErr {
				g.Expect(errs[i].Error()).To(ContainSubstring(want))
			}
		})
	}
}

func TestDefaults(t *testing.T) {
	g := NewWithT(t)
	t.Setenv("POD_NAMESPACE", "")
	o := NewOptions()
	g.Expect(o.LeaderElect).To(BeTrue(), "leader election is on by default")
	g.Expect(o.AgentNamespace).To(Equal("hostfleet-agent"))
	t.Setenv("POD_NAMESPACE", "open-cluster-management-agent-addon")
	g.Expect(NewOptions().AgentNamespace).To(Equal("open-cluster-management-agent-addon"))
}

// TestClaimWatchFromEnvironment: the add-on chooses the claim watch through
// the environment; the flag still overrides it.
func TestClaimWatchFromEnvironment(t *testing.T) {
	g := NewWithT(t)
	t.Setenv(hostfleetv1alpha1.EnvClaimWatch, "placed")
	o := NewOptions()
	g.Expect(o.ClaimWatch).To(Equal("placed"))
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	o.AddFlags(fs)
	g.Expect(fs.Parse([]string{"--claim-watch=label"})).To(Succeed())
	g.Expect(o.ClaimWatch).To(Equal("label"))
}
