// Package fence is the agent's one fence for "the cache has not seen a
// write yet": every writer of the agent's claims and hosts writes through
// the agent's Fence, which remembers each write made with the object's
// resourceVersion and who made it, so that the watch event it comes back
// as does not wake its writer (EchoFilter), a writer that reads an object
// the cache has not caught up on waits (Behind), and anyone can ask whether
// the cache shows every write of a kind (Unseen). Writers share one Fence
// and each sees only its own writes as echoes: another controller's write
// is news to it.
package fence

import (
	"context"
	"errors"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
)

// The kinds writes are remembered by.
const (
	Claims = "HostClaim"
	Hosts  = "BareMetalHost"
)

// Fence remembers writes, by object and writer.
//
// Only writes that carry the object's resourceVersion are remembered: the
// API server applies such a write only to that version, so of the update
// events leaving that version there is exactly one, and it is the write if
// the write succeeded. The event may arrive before the write's response:
// while the write is in flight, the event leaving its version is taken for
// it. If the write then fails, the reconcile that made it is retried anyway
// and sees whoever changed the object first.
//
// A nil *Fence remembers nothing and filters nothing.
type Fence struct {
	mu sync.Mutex
	m  map[key][]*write
}

type key struct {
	kind string
	types.NamespacedName
}

// write is one write: who made it, from the version it was made on to the
// one it made (empty while in flight); seen is set when an event leaving
// its version arrived while it was in flight.
type write struct {
	by       string
	from, to string
	seen     bool
}

// maxWrites bounds the writes remembered per object: a reconcile writes an
// object a few times, and the events arrive soon after. Older ones go.
const maxWrites = 8

func keyOf(kind string, obj client.Object) key {
	return key{kind, types.NamespacedName{Namespace: obj.GetNamespace(), Name: obj.GetName()}}
}

// Write makes a write by writer that carries obj's resourceVersion (fn
// must), and remembers it. obj holds the written object when fn returns.
func (e *Fence) Write(by, kind string, obj client.Object, fn func() error) error {
	from := obj.GetResourceVersion()
	if e == nil || from == "" {
		return fn()
	}
	k := keyOf(kind, obj)
	w := &write{by: by, from: from}
	e.mu.Lock()
	if e.m == nil {
		e.m = map[key][]*write{}
	}
	ws := append(e.m[k], w)
	if len(ws) > maxWrites {
		ws = ws[len(ws)-maxWrites:]
	}
	e.m[k] = ws
	e.mu.Unlock()

	err := fn()
	e.mu.Lock()
	defer e.mu.Unlock()
	to := obj.GetResourceVersion()
	switch {
	case err != nil:
		e.remove(k, w) // whoever changed the object sent the event
	case to == from:
		e.remove(k, w) // nothing written, no event
		if w.seen {
			// Nothing changed, yet an event left this version: it was
			// someone else's, and it was taken for this write. Decide again.
			gr := schema.GroupResource{Resource: kind}
			return apierrors.NewConflict(gr, obj.GetName(), errors.New("changed during a write that changed nothing"))
		}
	default:
		w.to = to
	}
	return err
}

// PatchLocked patches obj with its resourceVersion, as writer, remembering
// the write.
func (e *Fence) PatchLocked(ctx context.Context, c client.Client, by, kind string, obj, orig client.Object, opts ...client.PatchOption) error {
	return e.Write(by, kind, obj, func() error {
		return c.Patch(ctx, obj, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{}), opts...)
	})
}

// Unseen reports whether a write of this kind by writer (any writer: "")
// has not reached the cache yet: in flight, or made on a version the cache
// still shows (cached gives the cache's resourceVersion of an object, false
// when it has none). A write carries the version it was made on, so a cache
// past that version shows it, whether through its event or a relist.
func (e *Fence) Unseen(by, kind string, cached func(types.NamespacedName) (string, bool)) bool {
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
			if by != "" && w.by != by {
				continue
			}
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

// Behind reports whether obj is a version writer has written over, or is
// writing over: a cache that has not caught up with its writes.
func (e *Fence) Behind(by, kind string, obj client.Object) bool {
	if e == nil {
		return false
	}
	rv := obj.GetResourceVersion()
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, w := range e.m[keyOf(kind, obj)] {
		if w.by == by && w.from == rv {
			return true
		}
	}
	return false
}

// echo reports whether an update from old to new is a write of writer's
// (made or in flight).
func (e *Fence) echo(by, kind string, old, new client.Object) bool {
	if e == nil {
		return false
	}
	from, to := old.GetResourceVersion(), new.GetResourceVersion()
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, w := range e.m[keyOf(kind, new)] {
		switch {
		case w.from != from:
		case w.to == "":
			w.seen = true
			return w.by == by
		case w.to == to:
			return w.by == by
		}
	}
	return false
}

// Forget drops what is remembered of an object that is gone.
func (e *Fence) Forget(kind string, obj client.Object) {
	if e == nil {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.m, keyOf(kind, obj))
}

func (e *Fence) remove(k key, w *write) {
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

// EchoFilter is a predicate dropping the update events that echo writer's
// own writes, and forgetting the writes of deleted objects.
func EchoFilter[T client.Object](e *Fence, by, kind string) predicate.TypedFuncs[T] {
	return predicate.TypedFuncs[T]{
		UpdateFunc: func(ev event.TypedUpdateEvent[T]) bool { return !e.echo(by, kind, ev.ObjectOld, ev.ObjectNew) },
		DeleteFunc: func(ev event.TypedDeleteEvent[T]) bool {
			e.Forget(kind, ev.Object)
			return true
		},
	}
}
