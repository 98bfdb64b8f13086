package planes

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/wait"
)

// The planes' etcd is reached through its JSON gateway (/v3/kv/*), which
// etcd serves on its client URL: no etcd client library in the module.

// kv is one etcd key and its value, as the gateway sends them (base64).
type kv struct {
	Key   string `json:"key"`
	Value string `json:"value,omitempty"`
}

// registry is every key the API server stores, and its range end.
var (
	registryStart = base64.StdEncoding.EncodeToString([]byte("/registry/"))
	registryEnd   = base64.StdEncoding.EncodeToString([]byte("/registry0"))
)

// etcdCall posts a gateway request and decodes its answer into out.
func etcdCall(ctx context.Context, base, path string, in, out any) error {
	body, err := json.Marshal(in)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+path, bytes.NewReader(body))
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("etcd %s: %w", path, err)
	}
	defer func() { _ = resp.Body.Close() }()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("etcd %s: %w", path, err)
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("etcd %s: %s: %s", path, resp.Status, data)
	}
	if out == nil {
		return nil
	}
	return json.Unmarshal(data, out)
}

// registryKeys reads every key of the API server, with its value when
// values is set.
func registryKeys(ctx context.Context, base string, values bool) (map[string]string, error) {
	var out struct {
		Kvs []kv `json:"kvs"`
	}
	if err := etcdCall(ctx, base, "/v3/kv/range", map[string]any{"key": registryStart, "range_end": registryEnd, "keys_only": !values}, &out); err != nil {
		return nil, err
	}
	m := make(map[string]string, len(out.Kvs))
	for _, k := range out.Kvs {
		m[k.Key] = k.Value
	}
	return m, nil
}

// snapshot is a plane's etcd as it was once started and set up: what a
// reset brings it back to.
type snapshot map[string]string

// takeSnapshot records the plane's keys and values.
func (p *Plane) takeSnapshot(ctx context.Context) error {
	keys, err := registryKeys(ctx, p.etcdURL(), true)
	if err != nil {
		return fmt.Errorf("snapshot plane %s: %w", p.Name, err)
	}
	p.snapshot = keys
	return nil
}

// reset brings the plane's stored objects back to its snapshot: every key
// made since is deleted, every key of the snapshot deleted since is put
// back (keys of the snapshot that changed, such as the API server's own
// Leases, are left as they are). The API server's watch caches follow, as
// for any write to etcd; what it keeps outside etcd (its compiled
// admission policies, its authorizer's view of RBAC) comes from those
// watches too.
func (p *Plane) reset(ctx context.Context) error {
	now, err := registryKeys(ctx, p.etcdURL(), false)
	if err != nil {
		return fmt.Errorf("reset plane %s: %w", p.Name, err)
	}
	var ops []map[string]any
	for k := range now {
		if _, kept := p.snapshot[k]; !kept && !apiServerOwn(k) {
			ops = append(ops, map[string]any{"request_delete_range": map[string]any{"key": k}})
		}
	}
	for k, v := range p.snapshot {
		if _, there := now[k]; !there && !apiServerOwn(k) {
			ops = append(ops, map[string]any{"request_put": map[string]any{"key": k, "value": v}})
		}
	}
	// etcd takes at most 128 operations in one transaction.
	for len(ops) > 0 {
		n := min(len(ops), 100)
		if err := etcdCall(ctx, p.etcdURL(), "/v3/kv/txn", map[string]any{"success": ops[:n]}, nil); err != nil {
			return fmt.Errorf("reset plane %s: %w", p.Name, err)
		}
		ops = ops[n:]
	}
	return nil
}

// apiServerOwn says whether a key is the API server's to keep, with a lease
// of etcd's: its endpoint and identity leases, which a reset leaves alone.
func apiServerOwn(k string) bool {
	key, err := base64.StdEncoding.DecodeString(k)
	if err != nil {
		return false
	}
	for _, prefix := range []string{"/registry/masterleases/", "/registry/leases/kube-system/"} {
		if bytes.HasPrefix(key, []byte(prefix)) {
			return true
		}
	}
	return false
}

// etcdURL is the plane's etcd client URL.
func (p *Plane) etcdURL() string { return p.env.ControlPlane.Etcd.URL.String() }

// settle waits until the API server's caches have caught up with a reset:
// a namespace made only since the snapshot is gone from a read.
func (p *Plane) settle(ctx context.Context) error {
	var last error
	err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		ok, err := p.namespacesAsSnapshot(ctx)
		last = err
		return ok, nil
	})
	if err != nil {
		return fmt.Errorf("plane %s after its reset: %w (last: %v)", p.Name, err, last)
	}
	return nil
}

// namespacesAsSnapshot says whether the API server lists the namespaces of
// the snapshot and no other.
func (p *Plane) namespacesAsSnapshot(ctx context.Context) (bool, error) {
	var list corev1.NamespaceList
	if err := p.Client.List(ctx, &list); err != nil {
		return false, err
	}
	want := 0
	for k := range p.snapshot {
		key, err := base64.StdEncoding.DecodeString(k)
		if err == nil && bytes.HasPrefix(key, []byte("/registry/namespaces/")) {
			want++
		}
	}
	return len(list.Items) == want, nil
}
