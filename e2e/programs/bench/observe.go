package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"time"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hostfleet/hostfleet/e2e/harness/planes"
	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
)

// The scale run's observer creates the claims and watches them in a process
// of its own, as a tenant's client would: in the process of the 1 000
// agents, its goroutines waited for up to seconds behind theirs whenever
// the agents had a burst of work, and that wait was measured as the hub's
// (the hub API server served every create in under 1 s).

var observeSpec = flag.String("scale-observe", "", "internal: create and watch the scale run's claims as this JSON spec says, and print their times")

// observeRequest is what the observer is asked to do.
type observeRequest struct {
	Kubeconfig string
	Namespace  string
	Claims     int
	Rate       float64
}

// observation is what it saw, by claim index: when the bench asked for the
// create, when its watch first saw the claim, saw it placed on a cluster
// and saw it Ready; and the longest any of its goroutines waited to run.
type observation struct {
	Start                        time.Time
	Created, Seen, Placed, Ready []time.Time
	Waited                       time.Duration
	// Relists are the times the watches listed every claim again;
	// Resumes the times they watched again from the last version seen.
	Relists, Resumes []string
	Err              string
}

// observe runs the observer in a child process and returns what it saw.
func observe(ctx context.Context, req observeRequest, started func() error) (observation, error) {
	spec, err := json.Marshal(req)
	if err != nil {
		return observation{}, err
	}
	var out, errOut bytes.Buffer
	cmd := exec.CommandContext(ctx, os.Args[0], "-scale-observe", string(spec))
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Start(); err != nil {
		return observation{}, fmt.Errorf("observer: %w", err)
	}
	if err := started(); err != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return observation{}, err
	}
	if err := cmd.Wait(); err != nil {
		return observation{}, fmt.Errorf("observer: %w\n%s", err, tail(errOut.String()))
	}
	var o observation
	if err := json.Unmarshal(out.Bytes(), &o); err != nil {
		return observation{}, fmt.Errorf("observer's output: %w", err)
	}
	if o.Err != "" {
		return o, fmt.Errorf("observer: %s\n%s", o.Err, tail(errOut.String()))
	}
	return o, nil
}

// runObserver is the observer's process: it prints its observation as JSON.
func runObserver(spec string) error {
	var req observeRequest
	if err := json.Unmarshal([]byte(spec), &req); err != nil {
		return fmt.Errorf("-scale-observe: %w", err)
	}
	o, err := observeClaims(req)
	if err != nil {
		o.Err = err.Error()
	}
	return json.NewEncoder(os.Stdout).Encode(o)
}

func observeClaims(req observeRequest) (observation, error) {
	ctx := context.Background()
	o := observation{Created: make([]time.Time, req.Claims)}
	cfg, err := clientcmd.BuildConfigFromFlags("", req.Kubeconfig)
	if err != nil {
		return o, err
	}
	cfg.QPS, cfg.Burst = 1000, 2000 // the bench's rate, not the client's limit, paces the creates
	scheme := planes.Scheme()
	hub, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return o, err
	}
	// Placed: on a cluster (its label), which is what the agent acts on.
	placed, err := newClaimWatch(cfg, scheme, req.Namespace, func(c *metal3api.HostClaim) bool {
		return c.Labels[hostfleetv1alpha1.LabelCluster] != ""
	})
	if err != nil {
		return o, err
	}
	readyWatch, err := newClaimWatch(cfg, scheme, req.Namespace, ready)
	if err != nil {
		return o, err
	}
	waitedBefore := readRuntime()
	o.Start = time.Now()
	placedDone := make(chan error, 1)
	go func() { placedDone <- placed.wait(ctx, req.Claims, 20*time.Minute, nil) }()
	createDone := make(chan error, 1)
	go func() {
		// A steady rate whatever each create takes: up to 64 in flight.
		tick := time.NewTicker(time.Duration(float64(time.Second) / req.Rate))
		defer tick.Stop()
		inFlight := make(chan struct{}, 64)
		for i := 0; i < req.Claims; i++ {
			<-tick.C
			inFlight <- struct{}{}
			c := &metal3api.HostClaim{ObjectMeta: metav1.ObjectMeta{Namespace: req.Namespace, Name: claimName(i)}}
			o.Created[i] = time.Now()
			go func() {
				defer func() { <-inFlight }()
				if err := hub.Create(ctx, c); err != nil {
					select {
					case createDone <- err:
					default:
					}
				}
			}()
		}
	}()
	if err := readyWatch.wait(ctx, req.Claims, 20*time.Minute, createDone); err != nil {
		return o, fmt.Errorf("claims Ready: %w", err)
	}
	if err := <-placedDone; err != nil {
		return o, err
	}
	o.Waited = longest(waitedBefore[0], readRuntime()[0])
	o.Relists = append(placed.relists, readyWatch.relists...)
	o.Resumes = append(placed.resumes, readyWatch.resumes...)
	o.Seen, o.Placed, o.Ready = make([]time.Time, req.Claims), make([]time.Time, req.Claims), make([]time.Time, req.Claims)
	for i := range req.Claims {
		name := claimName(i)
		o.Seen[i], o.Placed[i], o.Ready[i] = placed.seen[name], placed.times[name], readyWatch.times[name]
	}
	return o, nil
}

func claimName(i int) string { return fmt.Sprintf("claim-%05d", i) }
