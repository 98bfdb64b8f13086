package main

import (
	"context"
	"fmt"
	"maps"
	"os"
	"slices"
	"time"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
)

// claimWatch follows the claims of one namespace through a watch (a poll
// listing every claim would cost the API server more than what is measured)
// and records when each first met a condition.
type claimWatch struct {
	c     client.WithWatch
	ns    string
	met   func(*metal3api.HostClaim) bool
	times map[string]time.Time
	// seen is when each claim was first seen (its creation event, or a list).
	seen map[string]time.Time
	// waiting is the last seen version of each claim not met yet.
	waiting map[string]*metal3api.HostClaim
	// relists says when the watch listed again after its first list;
	// resumes when it watched again from the last version it saw.
	relists, resumes []string
}

func newClaimWatch(cfg *rest.Config, scheme *runtime.Scheme, ns string, met func(*metal3api.HostClaim) bool) (*claimWatch, error) {
	c, err := client.NewWithWatch(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, err
	}
	return &claimWatch{c: c, ns: ns, met: met, times: map[string]time.Time{}, seen: map[string]time.Time{}, waiting: map[string]*metal3api.HostClaim{}}, nil
}

// ready reports whether a claim's Ready condition is True.
func ready(c *metal3api.HostClaim) bool {
	cond := meta.FindStatusCondition(c.Status.Conditions, hostfleetv1alpha1.ConditionReady)
	return cond != nil && cond.Status == metav1.ConditionTrue
}

// wait returns once n claims have met the condition, or fails after timeout
// or when stop says why.
func (w *claimWatch) wait(ctx context.Context, n int, timeout time.Duration, stop <-chan error) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	// A loaded API server may fail a list or a watch (a timeout): tried
	// again a second later, until the timeout.
	retry := func(err error) error {
		fmt.Fprintf(os.Stderr, "watch: %d of %d claims: %v; trying again\n", len(w.times), n, err)
		select {
		case <-ctx.Done():
			return fmt.Errorf("%d of %d claims after %s: %w", len(w.times), n, timeout, err)
		case <-time.After(time.Second):
			return nil
		}
	}
	for first := true; ; first = false {
		if !first {
			w.relists = append(w.relists, time.Now().Format("15:04:05.000"))
		}
		var list metal3api.HostClaimList
		if err := w.c.List(ctx, &list, client.InNamespace(w.ns)); err != nil {
			if err := retry(err); err != nil {
				return err
			}
			continue
		}
		for i := range list.Items {
			w.see(&list.Items[i])
		}
		if len(w.times) >= n {
			return nil
		}
		// Watch from the list's version, and again from the last version
		// seen when a watch ends (the server closes watches, e.g. one that
		// fell behind): a list of every claim costs the hub what the bench
		// measures, so only a version the server no longer has, or a watch
		// quiet for long, lists again.
		for rv := list.ResourceVersion; ; {
			wi, err := w.c.Watch(ctx, &metal3api.HostClaimList{}, client.InNamespace(w.ns),
				&client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: rv, AllowWatchBookmarks: true}})
			if err != nil {
				if err := retry(err); err != nil {
					return err
				}
				break
			}
			next, done, err := w.follow(ctx, wi, n, stop)
			wi.Stop()
			if done || err != nil {
				return err
			}
			if next == "" {
				break
			}
			w.resumes = append(w.resumes, time.Now().Format("15:04:05.000"))
			rv = next
		}
	}
}

// follow reads a watch until n claims have met the condition (done), the
// watch ends, or stop or ctx says so. It returns the last resourceVersion the
// watch delivered, to watch again from; "" when the watch must not be
// resumed but listed again (the version is gone, or it was quiet for long).
func (w *claimWatch) follow(ctx context.Context, wi watch.Interface, n int, stop <-chan error) (string, bool, error) {
	var rv string
	for {
		select {
		case err := <-stop:
			return "", false, fmt.Errorf("stopped with %d of %d claims: %v", len(w.times), n, err)
		case <-ctx.Done():
			return "", false, fmt.Errorf("only %d of %d claims: %w", len(w.times), n, ctx.Err())
		case <-time.After(30 * time.Second):
			// Quiet for long: list again rather than trust the watch.
			fmt.Fprintf(os.Stderr, "watch: quiet for 30s with %d of %d claims; listing again\n", len(w.times), n)
			w.printWaiting(3)
			return "", false, nil
		case ev, ok := <-wi.ResultChan():
			if !ok {
				return rv, false, nil
			}
			switch ev.Type {
			case watch.Error:
				// 410 Gone, or any other error: list again.
				fmt.Fprintf(os.Stderr, "watch: %v; listing again\n", apierrors.FromObject(ev.Object))
				return "", false, nil
			case watch.Bookmark:
				if o, isObject := ev.Object.(client.Object); isObject {
					rv = o.GetResourceVersion()
				}
				continue
			}
			if c, isClaim := ev.Object.(*metal3api.HostClaim); isClaim {
				rv = c.ResourceVersion
				if ev.Type != watch.Deleted {
					w.see(c)
				}
			}
			if len(w.times) >= n {
				return rv, true, nil
			}
		}
	}
}

// span is when the first and the last claim met the condition.
func (w *claimWatch) span() (first, last time.Time) {
	for _, t := range w.times {
		if first.IsZero() || t.Before(first) {
			first = t
		}
		if t.After(last) {
			last = t
		}
	}
	return first, last
}

func (w *claimWatch) see(c *metal3api.HostClaim) {
	if _, ok := w.seen[c.Name]; !ok {
		w.seen[c.Name] = time.Now()
	}
	if _, seen := w.times[c.Name]; seen {
		return
	}
	if w.met(c) {
		w.times[c.Name] = time.Now()
		delete(w.waiting, c.Name)
		return
	}
	w.waiting[c.Name] = c
}

// printWaiting prints up to max claims not met yet: their cluster and
// conditions, which say why they wait.
func (w *claimWatch) printWaiting(max int) {
	for _, name := range slices.Sorted(maps.Keys(w.waiting))[:min(max, len(w.waiting))] {
		c := w.waiting[name]
		fmt.Fprintf(os.Stderr, "  waiting: %s, cluster %q, created %s ago\n", name, c.Labels[hostfleetv1alpha1.LabelCluster],
			time.Since(c.CreationTimestamp.Time).Round(time.Second))
		for _, cond := range c.Status.Conditions {
			fmt.Fprintf(os.Stderr, "    %s=%s %s: %s\n", cond.Type, cond.Status, cond.Reason, cond.Message)
		}
	}
}
