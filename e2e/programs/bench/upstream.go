package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hostfleet/hostfleet/e2e/harness/planes"
	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
)

// upstreamVersion is the baremetal-operator e2e/tools/upstreambind/go.mod pins.
const upstreamVersion = "v0.13.2"

// Namespaces of upstream's run, on the infrastructure plane.
const (
	upstreamHosts  = "upstream-hosts"
	upstreamClaims = "upstream-claims"
)

// upstreamResult is upstream's association over n claims.
type upstreamResult struct {
	elapsed time.Duration
	writes  int
	// cpu is the API server's and the controller's.
	server, controller time.Duration
}

// beside is the program name built beside this one (make bench, make
// bench-scale) unless flagValue names it.
func beside(flagValue, name string) string {
	if flagValue != "" {
		return flagValue
	}
	self, err := os.Executable()
	if err != nil {
		return name
	}
	return filepath.Join(filepath.Dir(self), name)
}

// runUpstream binds n claims to n hosts on the infrastructure plane with
// upstream metal3's association (pkg/hostclaim, in its own module), in a
// child process with the same number of workers.
func runUpstream(ctx context.Context, f *planes.Fleet, binary string, n, workers int) (upstreamResult, error) {
	infra := f.Plane("infra-1")
	for _, o := range []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: upstreamHosts}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: upstreamClaims}},
		&metal3api.HostDeployPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: upstreamHosts, Name: "claims"},
			Spec: metal3api.HostDeployPolicySpec{HostClaimNamespaces: &metal3api.HostClaimNamespaces{Names: []string{upstreamClaims}}}},
	} {
		if err := infra.Client.Create(ctx, o); err != nil {
			return upstreamResult{}, err
		}
	}
	if err := createHosts(ctx, infra.Client, upstreamHosts, n, workers); err != nil {
		return upstreamResult{}, err
	}
	if err := createClaims(ctx, infra.Client, upstreamClaims, n, workers, nil); err != nil {
		return upstreamResult{}, err
	}
	associated := func(c *metal3api.HostClaim) bool {
		cond := meta.FindStatusCondition(c.Status.Conditions, hostfleetv1alpha1.ConditionAssociated)
		return c.Status.BareMetalHost != nil && cond != nil && cond.Status == metav1.ConditionTrue
	}
	w, err := newClaimWatch(infra.Config, f.Scheme, upstreamClaims, associated)
	if err != nil {
		return upstreamResult{}, err
	}

	var out bytes.Buffer
	cmd := exec.Command(binary, "-kubeconfig", infra.Kubeconfig, "-namespace", upstreamClaims, "-workers", strconv.Itoa(workers))
	cmd.Stdout, cmd.Stderr = &out, &out
	serverBefore, err := infra.APIServerUsage()
	if err != nil {
		return upstreamResult{}, err
	}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return upstreamResult{}, fmt.Errorf("start %s (make bench builds it): %w", binary, err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	waitErr := w.wait(ctx, n, 10*time.Minute, exited)
	res := upstreamResult{elapsed: time.Since(start)}
	serverAfter, serr := infra.APIServerUsage()
	child, cerr := planes.ProcessUsage(cmd.Process.Pid)
	_ = cmd.Process.Signal(syscall.SIGTERM)
	if waitErr == nil {
		<-exited
	}
	if waitErr != nil {
		return res, fmt.Errorf("upstream association: %w\n%s", waitErr, out.String())
	}
	if serr != nil || cerr != nil {
		return res, fmt.Errorf("upstream CPU: %v %v", serr, cerr)
	}
	res.server, res.controller = serverAfter.Sub(serverBefore).CPU, child.CPU
	for _, line := range strings.Split(out.String(), "\n") {
		if v, ok := strings.CutPrefix(line, "writes "); ok {
			res.writes, _ = strconv.Atoi(v)
		}
	}
	if res.writes == 0 {
		return res, fmt.Errorf("upstream association reported no writes:\n%s", out.String())
	}
	return res, nil
}

// createClaims creates n claims c0000… in ns, with labels, from workers.
func createClaims(ctx context.Context, c client.Client, ns string, n, workers int, labels map[string]string) error {
	return parallel(n, workers, func(i int) error {
		claim := &metal3api.HostClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("c%04d", i), Labels: labels}}
		if labels[hostfleetv1alpha1.LabelCluster] != "" {
			claim.Annotations = planes.PlacedBy() // no scheduler runs: placed as it would
		}
		return c.Create(ctx, claim)
	})
}

// createHosts creates n available hosts h0000… in namespace ns.
func createHosts(ctx context.Context, c client.Client, ns string, n, workers int) error {
	return parallel(n, workers, func(i int) error {
		h := &metal3api.BareMetalHost{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("h%04d", i)},
			Spec: metal3api.BareMetalHostSpec{BMC: metal3api.BMCDetails{Address: fmt.Sprintf("ipmi://127.0.0.1:%d", 10000+i), CredentialsName: "bmc"}}}
		if err := c.Create(ctx, h); err != nil {
			return err
		}
		return planes.MarkAvailable(ctx, c, h)
	})
}
