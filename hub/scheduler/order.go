package scheduler

import (
	"slices"
	"sync"

	toolscache "k8s.io/client-go/tools/cache"

	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
)

// order keeps the clusters by the hosts their HostInventory counts
// available (every pool's), most first. No claim can be given more free
// matching hosts on a cluster than that count, so a decision visits the
// clusters in this order and stops once no cluster left can beat the best
// it found (walk): over a fleet of thousands it visits a handful. It
// follows the inventories' informer, so it may lag the cache by an event.
type order struct {
	mu sync.RWMutex
	// levels are the counts that have clusters, highest first; at holds
	// each count's clusters, sorted; of is each cluster's count.
	levels []int32
	at     map[int32][]string
	of     map[string]int32
}

func newOrder() *order {
	return &order{at: map[int32][]string{}, of: map[string]int32{}}
}

// bound is the most free matching hosts any claim can count on the
// inventory: its pools' available hosts, summed from the pools Place reads
// (not status.available, which a writer keeps equal to it).
func bound(inv *hostfleetv1alpha1.HostInventory) int32 {
	var n int32
	for _, p := range inv.Status.Pools {
		n += p.Available
	}
	return n
}

// set records the inventory of cluster (nil: none).
func (o *order) set(cluster string, inv *hostfleetv1alpha1.HostInventory) {
	o.mu.Lock()
	defer o.mu.Unlock()
	n, had := o.of[cluster]
	if inv != nil && had && bound(inv) == n {
		return
	}
	if had {
		names := o.at[n]
		if i, found := slices.BinarySearch(names, cluster); found {
			names = slices.Delete(names, i, i+1)
		}
		o.at[n] = names
		if len(names) == 0 {
			delete(o.at, n)
			o.levels = slices.DeleteFunc(o.levels, func(l int32) bool { return l == n })
		}
		delete(o.of, cluster)
	}
	if inv == nil {
		return
	}
	n = bound(inv)
	o.of[cluster] = n
	names := o.at[n]
	i, _ := slices.BinarySearch(names, cluster)
	o.at[n] = slices.Insert(names, i, cluster)
	if len(names) == 0 {
		i, _ := slices.BinarySearchFunc(o.levels, n, func(l, n int32) int { return int(n - l) })
		o.levels = slices.Insert(o.levels, i, n)
	}
}

// walk calls visit on the clusters with a count above best(), highest
// first, until visit returns false or no cluster left has a count above
// what best returns then. Within a count the clusters are visited from the
// start-th on, wrapping around (a claim's hash spreads claims among
// equals).
func (o *order) walk(start uint32, best func() int, visit func(cluster string) bool) {
	o.mu.RLock()
	defer o.mu.RUnlock()
	for _, n := range o.levels {
		names := o.at[n]
		s := int(start % uint32(len(names)))
		for i := range names {
			if int(n) <= best() {
				return
			}
			if !visit(names[(s+i)%len(names)]) {
				return
			}
		}
	}
}

// handler follows the inventories' informer: a cluster's inventory is the
// one named after it in its namespace (what decide reads).
func (o *order) handler() toolscache.ResourceEventHandler {
	set := func(obj any, deleted bool) {
		if d, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
			obj, deleted = d.Obj, true
		}
		inv, ok := obj.(*hostfleetv1alpha1.HostInventory)
		if !ok || inv.Name != inv.Namespace {
			return
		}
		if deleted {
			o.set(inv.Namespace, nil)
			return
		}
		o.set(inv.Namespace, inv)
	}
	return toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { set(obj, false) },
		UpdateFunc: func(_, obj any) { set(obj, false) },
		DeleteFunc: func(obj any) { set(obj, true) },
	}
}
