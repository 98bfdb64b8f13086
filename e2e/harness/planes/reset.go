package planes

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
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
// watches too. Admission configuration goes first, and the API server
// serves it as the snapshot's before anything else is reset: a policy
// binding must never be seen without the parameters it names, nor a
// webhook without its service, or the next test's first write is refused.
func (p *Plane) reset(ctx context.Context) error {
	now, err := registryKeys(ctx, p.etcdURL(), false)
	if err != nil {
		return fmt.Errorf("reset plane %s: %w", p.Name, err)
	}
	changed, err := p.restore(ctx, now, admissionKey)
	if err != nil {
		return err
	}
	if changed > 0 {
		if err := p.settleAdmission(ctx); err != nil {
			return err
		}
	}
	_, err = p.restore(ctx, now, func(k []byte) bool { return !admissionKey(k) })
	return err
}

// restore deletes the keys of now that the snapshot lacks and puts back
// those of the snapshot now lacks, of the keys which selects; it returns
// how many.
func (p *Plane) restore(ctx context.Context, now map[string]string, which func([]byte) bool) (int, error) {
	var ops []map[string]any
	for k := range now {
		if _, kept := p.snapshot[k]; !kept && !apiServerOwn(k) && which(decodeKey(k)) {
			ops = append(ops, map[string]any{"request_delete_range": map[string]any{"key": k}})
		}
	}
	for k, v := range p.snapshot {
		if _, there := now[k]; !there && !apiServerOwn(k) && which(decodeKey(k)) {
			ops = append(ops, map[string]any{"request_put": map[string]any{"key": k, "value": v}})
		}
	}
	changed := len(ops)
	// etcd takes at most 128 operations in one transaction.
	for len(ops) > 0 {
		n := min(len(ops), 100)
		if err := etcdCall(ctx, p.etcdURL(), "/v3/kv/txn", map[string]any{"success": ops[:n]}, nil); err != nil {
			return 0, fmt.Errorf("reset plane %s: %w", p.Name, err)
		}
		ops = ops[n:]
	}
	return changed, nil
}

// admissionPrefixes are where the API server stores what its admission
// plugins read: policies, their bindings, webhook configurations.
var admissionPrefixes = []string{
	"/registry/validatingadmissionpolicies/", "/registry/validatingadmissionpolicybindings/",
	"/registry/mutatingadmissionpolicies/", "/registry/mutatingadmissionpolicybindings/",
	"/registry/validatingwebhookconfigurations/", "/registry/mutatingwebhookconfigurations/",
}

func admissionKey(k []byte) bool {
	for _, prefix := range admissionPrefixes {
		if bytes.HasPrefix(k, []byte(prefix)) {
			return true
		}
	}
	return false
}

// decodeKey is a gateway key as stored (nil if it is not base64).
func decodeKey(k string) []byte {
	key, _ := base64.StdEncoding.DecodeString(k)
	return key
}

// apiServerOwn says whether a key is the API server's to keep, with a lease
// of etcd's: its endpoint and identity leases, which a reset leaves alone.
func apiServerOwn(k string) bool {
	key := decodeKey(k)
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
	return len(list.Items) == p.stored("/registry/namespaces/"), nil
}

// stored counts the snapshot's keys under prefix.
func (p *Plane) stored(prefix string) int {
	n := 0
	for k := range p.snapshot {
		if bytes.HasPrefix(decodeKey(k), []byte(prefix)) {
			n++
		}
	}
	return n
}

// settleAdmission waits until the API server lists the policy bindings and
// webhook configurations of the snapshot and no other, then until its
// admission policies are recompiled from them (awaitPolicies).
func (p *Plane) settleAdmission(ctx context.Context) error {
	lists := map[string]client.ObjectList{
		"/registry/validatingadmissionpolicybindings/": &admissionregistrationv1.ValidatingAdmissionPolicyBindingList{},
		"/registry/validatingwebhookconfigurations/":   &admissionregistrationv1.ValidatingWebhookConfigurationList{},
		"/registry/mutatingwebhookconfigurations/":     &admissionregistrationv1.MutatingWebhookConfigurationList{},
	}
	var last error
	err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		for prefix, list := range lists {
			if last = p.Client.List(ctx, list); last != nil {
				return false, nil
			}
			if meta.LenList(list) != p.stored(prefix) {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("plane %s: admission configuration after its reset: %w (last: %v)", p.Name, err, last)
	}
	return p.awaitPolicies(ctx)
}

// probe names the policy, its binding and the ConfigMap awaitPolicies
// asks about.
const probe = "hostfleet-reset-probe"

// awaitPolicies waits until the API server's validating admission policies
// are recompiled from what it now stores: it recompiles at most once a
// second after a change, and until then enforces a binding that is gone,
// refusing writes when the parameters it names are gone too. A probe
// policy is bound, a dry-run create is awaited refused by it, then the
// probe goes and the create is awaited allowed: the policies in force are
// then those stored.
func (p *Plane) awaitPolicies(ctx context.Context) error {
	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: probe},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionregistrationv1.RuleWithOperations{Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
					Rule: admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}}}}}},
			Validations: []admissionregistrationv1.Validation{{Expression: fmt.Sprintf("object.metadata.name != %q", probe)}},
		}}
	binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: probe},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: probe,
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny}}}
	ask := func(refused bool) error {
		var last error
		err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: metav1.NamespaceDefault, Name: probe}}
			last = p.Client.Create(ctx, cm, client.DryRunAll)
			return (last != nil && strings.Contains(last.Error(), probe)) == refused, nil
		})
		if err != nil {
			return fmt.Errorf("plane %s: admission policies after its reset (refused: %t): %w (last: %v)", p.Name, refused, err, last)
		}
		return nil
	}
	for _, obj := range []client.Object{policy, binding} {
		if err := p.Client.Create(ctx, obj); err != nil {
			return fmt.Errorf("plane %s: %w", p.Name, err)
		}
	}
	if err := ask(true); err != nil {
		return err
	}
	for _, obj := range []client.Object{binding, policy} {
		if err := p.Client.Delete(ctx, obj); err != nil {
			return fmt.Errorf("plane %s: %w", p.Name, err)
		}
	}
	return ask(false)
}
