package claim

import (
	"context"
	"errors"
	"sync"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
)

// echoes remembers the agent's own writes, so that the watch events they
// come back as do not wake a reconcile that already knows what they carry.
//
// Only writes that carry the object's resourceVersion are remembered: the
// API server applies such a write only to that version, so of the update
// events leaving that version there is exactly one, and it is the agent's
// write if the write succeeded. The event may arrive before the write's
// response: while the write is in flight, the event leaving its version is
// dropped too. If the write then fails, the reconcile that made it is
// retried anyway and sees whoever changed the object first.
//
// A nil *echoes remembers nothing and filters nothing.
type echoes struct {
	mu sync.Mutex
	m  map[echoKey][]*echoWrite
}

type echoKey struct {
	kind string
	types.NamespacedName
}

// echoWrite is one write: from the version it was made on to the one it made
// (empty while in flight). seen is set when its event was dropped.
type echoWrite struct {
	from, to string
	seen     bool
}

// maxEchoes bounds the writes remembered per object: a reconcile writes an
// object a few times, and the events arrive soon after.
const maxEchoes = 8

func keyOf(kind string, obj client.Object) echoKey {
	return echoKey{kind, types.NamespacedName{Namespace: obj.GetNamespace(), Name: obj.GetName()}}
}

// write makes a write that carries obj's resourceVersion (fn must), and
// remembers it. obj holds the written object when fn returns.
func (e *echoes) write(kind string, obj client.Object, fn func() error) error {
	from := obj.GetResourceVersion()
	if e == nil || from == "" {
		return fn()
	}
	k := keyOf(kind, obj)
	w := &echoWrite{from: from}
	e.mu.Lock()
	if e.m == nil {
		e.m = map[echoKey][]*echoWrite{}
	}
	ws := append(e.m[k], w)
	if len(ws) > maxEchoes {
		ws = ws[len(ws)-maxEchoes:]
	}
	e.m[k] = ws
	e.mu.Unlock()

	err := fn()
	e.mu.Lock()
	defer e.mu.Unlock()
	to := obj.GetResourceVersion()
	switch {
	case err != nil || w.seen:
		// Failed: whoever changed the object sent the event. Seen: the
		// event was this write's, and it is dropped already.
		e.remove(k, w)
		if err == nil && to == from {
			// Nothing changed, yet an event left this version: it was
			// someone else's, and it was dropped. Decide again.
			gr := schema.GroupResource{Resource: kind}
			return apierrors.NewConflict(gr, obj.GetName(), errors.New("changed during a write that changed nothing"))
		}
	case to == from:
		e.remove(k, w) // nothing written, no event
	default:
		w.to = to
	}
	return err
}

// unseen reports whether a write of this kind has not reached the cache
// yet: in flight, or made on a version the cache still shows (cached gives
// the cache's resourceVersion of an object, false when it has none). A
// write carries the version it was made on, so a cache past that version
// shows it, whether through its event or a relist.
func (e *echoes) unseen(kind string, cached func(types.NamespacedName) (string, bool)) bool {
	if e == nil {
		return false
	}
	type made struct {
		key  types.NamespacedName
		from string
	}
	var check []made
	e.mu.Lock()
	for k, ws := range e.m {
		if k.kind != kind {
			continue
		}
		for _, w := range ws {
			if w.to == "" {
				e.mu.Unlock()
				return true
			}
			check = append(check, made{k.NamespacedName, w.from})
		}
	}
	e.mu.Unlock()
	for _, m := range check {
		if rv, ok := cached(m.key); ok && rv == m.from {
			return true
		}
	}
	return false
}

// HostWritesSeen reports whether the cache shows every host write this
// reconciler made (bindings and releases).
func (r *Reconciler) HostWritesSeen(ctx context.Context) bool {
	return !r.echo.unseen(echoHost, func(key types.NamespacedName) (string, bool) {
		// The cached host (a metadata-only read would start a second watch).
		h := &metal3api.BareMetalHost{}
		if err := r.Managed.Get(ctx, key, h); err != nil {
			return "", false
		}
		return h.ResourceVersion, true
	})
}

func (e *echoes) remove(k echoKey, w *echoWrite) {
	ws := e.m[k]
	for i, x := range ws {
		if x == w {
			ws = append(ws[:i:i], ws[i+1:]...)
			break
		}
	}
	if len(ws) == 0 {
		delete(e.m, k)
		return
	}
	e.m[k] = ws
}

// echo reports whether an update from old to new is one of the agent's
// writes (made or in flight), and forgets a made one.
func (e *echoes) echo(kind string, old, new client.Object) bool {
	if e == nil {
		return false
	}
	k := keyOf(kind, new)
	from, to := old.GetResourceVersion(), new.GetResourceVersion()
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, w := range e.m[k] {
		switch {
		case w.from != from:
		case w.to == "":
			w.seen = true
			return true
		case w.to == to:
			e.remove(k, w)
			return true
		}
	}
	return false
}

// behind reports whether obj is a version the agent has written over, or
// is writing over: a cache that has not caught up with the agent's writes.
func (e *echoes) behind(kind string, obj client.Object) bool {
	if e == nil {
		return false
	}
	rv := obj.GetResourceVersion()
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, w := range e.m[keyOf(kind, obj)] {
		if w.from == rv {
			return true
		}
	}
	return false
}

// forget drops what is remembered of an object that is gone.
func (e *echoes) forget(kind string, obj client.Object) {
	if e == nil {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.m, keyOf(kind, obj))
}

// echoFilter is a predicate dropping the update events that echo the
// agent's own writes, and forgetting the writes of deleted objects.
func echoFilter[T client.Object](e *echoes, kind string) predicate.TypedFuncs[T] {
	return predicate.TypedFuncs[T]{
		UpdateFunc: func(ev event.TypedUpdateEvent[T]) bool { return !e.echo(kind, ev.ObjectOld, ev.ObjectNew) },
		DeleteFunc: func(ev event.TypedDeleteEvent[T]) bool {
			e.forget(kind, ev.Object)
			return true
		},
	}
}

// patchLocked patches obj with its resourceVersion, remembering the write.
func (e *echoes) patchLocked(ctx context.Context, c client.Client, kind string, obj client.Object, orig client.Object) error {
	return e.write(kind, obj, func() error {
		return c.Patch(ctx, obj, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{}))
	})
}
