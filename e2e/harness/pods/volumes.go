//go:build linux

package pods

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// rootCAConfigMap is the ConfigMap every namespace gets with the API server's
// CA; the runner answers it from the plane itself when it is not there.
const rootCAConfigMap = "kube-root-ca.crt"

// errWaiting marks a pod that cannot start yet (a Secret or ConfigMap it needs
// does not exist), as a kubelet keeps it in ContainerCreating.
type errWaiting struct{ msg string }

func (e errWaiting) Error() string { return e.msg }

// files is a volume's content: relative path to content and mode.
type files map[string]file

type file struct {
	data []byte
	mode os.FileMode
}

// volumeFiles renders a volume's files. Empty-dir volumes return nil.
func (r *Runner) volumeFiles(ctx context.Context, pod *corev1.Pod, v corev1.Volume) (files, error) {
	switch {
	case v.EmptyDir != nil:
		return nil, nil
	case v.Secret != nil:
		data, err := r.secretData(ctx, pod.Namespace, v.Secret.SecretName, ptr.Deref(v.Secret.Optional, false))
		if err != nil {
			return nil, err
		}
		return keyFiles(data, v.Secret.Items, v.Secret.DefaultMode), nil
	case v.ConfigMap != nil:
		data, err := r.configMapData(ctx, pod.Namespace, v.ConfigMap.Name, ptr.Deref(v.ConfigMap.Optional, false))
		if err != nil {
			return nil, err
		}
		return keyFiles(data, v.ConfigMap.Items, v.ConfigMap.DefaultMode), nil
	case v.DownwardAPI != nil:
		out := files{}
		for _, item := range v.DownwardAPI.Items {
			if item.FieldRef == nil {
				continue
			}
			val, err := fieldValue(pod, item.FieldRef.FieldPath)
			if err != nil {
				return nil, err
			}
			out[item.Path] = file{data: []byte(val), mode: mode(item.Mode, v.DownwardAPI.DefaultMode)}
		}
		return out, nil
	case v.Projected != nil:
		out := files{}
		for _, src := range v.Projected.Sources {
			var part files
			var err error
			switch {
			case src.ServiceAccountToken != nil:
				var token string
				token, err = r.token(ctx, pod, src.ServiceAccountToken)
				part = files{src.ServiceAccountToken.Path: {data: []byte(token), mode: mode(nil, v.Projected.DefaultMode)}}
			case src.ConfigMap != nil:
				var data map[string][]byte
				data, err = r.configMapData(ctx, pod.Namespace, src.ConfigMap.Name, ptr.Deref(src.ConfigMap.Optional, false))
				part = keyFiles(data, src.ConfigMap.Items, v.Projected.DefaultMode)
			case src.Secret != nil:
				var data map[string][]byte
				data, err = r.secretData(ctx, pod.Namespace, src.Secret.Name, ptr.Deref(src.Secret.Optional, false))
				part = keyFiles(data, src.Secret.Items, v.Projected.DefaultMode)
			case src.DownwardAPI != nil:
				part, err = r.volumeFiles(ctx, pod, corev1.Volume{VolumeSource: corev1.VolumeSource{DownwardAPI: &corev1.DownwardAPIVolumeSource{
					Items: src.DownwardAPI.Items, DefaultMode: v.Projected.DefaultMode}}})
			}
			if err != nil {
				return nil, err
			}
			for k, f := range part {
				out[k] = f
			}
		}
		return out, nil
	}
	return nil, fmt.Errorf("volume %s: only Secret, ConfigMap, projected, downward API and emptyDir volumes are supported", v.Name)
}

func (r *Runner) secretData(ctx context.Context, ns, name string, optional bool) (map[string][]byte, error) {
	s := &corev1.Secret{}
	if err := r.direct.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, s); err != nil {
		if apierrors.IsNotFound(err) {
			if optional {
				return nil, nil
			}
			return nil, errWaiting{fmt.Sprintf("secret %q not found", name)}
		}
		return nil, err
	}
	return s.Data, nil
}

func (r *Runner) configMapData(ctx context.Context, ns, name string, optional bool) (map[string][]byte, error) {
	cm := &corev1.ConfigMap{}
	if err := r.direct.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, cm); err != nil {
		if apierrors.IsNotFound(err) {
			if name == rootCAConfigMap {
				return map[string][]byte{"ca.crt": r.opts.Config.CAData}, nil
			}
			if optional {
				return nil, nil
			}
			return nil, errWaiting{fmt.Sprintf("configmap %q not found", name)}
		}
		return nil, err
	}
	data := map[string][]byte{}
	for k, v := range cm.Data {
		data[k] = []byte(v)
	}
	for k, v := range cm.BinaryData {
		data[k] = v
	}
	return data, nil
}

// token returns a service-account token bound to the pod, asked of the plane
// once and again when 80% of its life has passed, as the kubelet does.
func (r *Runner) token(ctx context.Context, pod *corev1.Pod, p *corev1.ServiceAccountTokenProjection) (string, error) {
	sa := pod.Spec.ServiceAccountName
	if sa == "" {
		sa = "default"
	}
	key := fmt.Sprintf("%s/%s/%s/%d", pod.UID, sa, p.Audience, ptr.Deref(p.ExpirationSeconds, 0))
	if t, ok := r.tokens.Load(key); ok && time.Now().Before(t.(cachedToken).renewAt) {
		return t.(cachedToken).token, nil
	}
	tr := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
		ExpirationSeconds: ptr.To(int64(3600)),
		BoundObjectRef:    &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: pod.Name, UID: pod.UID},
	}}
	if p.Audience != "" {
		tr.Spec.Audiences = []string{p.Audience}
	}
	if p.ExpirationSeconds != nil {
		tr.Spec.ExpirationSeconds = p.ExpirationSeconds
	}
	account := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: pod.Namespace, Name: sa}}
	if err := r.direct.SubResource("token").Create(ctx, account, tr); err != nil {
		if apierrors.IsNotFound(err) {
			return "", errWaiting{fmt.Sprintf("service account %q not found", sa)}
		}
		return "", fmt.Errorf("token for service account %s: %w", sa, err)
	}
	life := time.Until(tr.Status.ExpirationTimestamp.Time)
	r.tokens.Store(key, cachedToken{token: tr.Status.Token, renewAt: time.Now().Add(life * 8 / 10)})
	return tr.Status.Token, nil
}

// forgetTokens drops a stopped pod's tokens.
func (r *Runner) forgetTokens(uid types.UID) {
	r.tokens.Range(func(k, _ any) bool {
		if strings.HasPrefix(k.(string), string(uid)+"/") {
			r.tokens.Delete(k)
		}
		return true
	})
}

type cachedToken struct {
	token   string
	renewAt time.Time
}

func keyFiles(data map[string][]byte, items []corev1.KeyToPath, defaultMode *int32) files {
	out := files{}
	if len(items) == 0 {
		for k, v := range data {
			out[k] = file{data: v, mode: mode(nil, defaultMode)}
		}
		return out
	}
	for _, it := range items {
		if v, ok := data[it.Key]; ok {
			out[it.Path] = file{data: v, mode: mode(it.Mode, defaultMode)}
		}
	}
	return out
}

func mode(m, def *int32) os.FileMode {
	if m != nil {
		return os.FileMode(*m)
	}
	if def != nil {
		return os.FileMode(*def)
	}
	return 0o644
}

// write makes dir hold exactly fs; unchanged files are left alone, so
// programs watching them see only real changes. It reports whether anything
// changed.
func (fs files) write(dir string) (bool, error) {
	changed := false
	want := map[string]bool{}
	for rel, f := range fs {
		path := filepath.Join(dir, filepath.Clean("/"+rel))
		want[path] = true
		if old, err := os.ReadFile(path); err == nil && bytes.Equal(old, f.data) {
			continue
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return changed, err
		}
		tmp := path + ".tmp"
		if err := os.WriteFile(tmp, f.data, f.mode|0o400); err != nil {
			return changed, err
		}
		if err := os.Rename(tmp, path); err != nil {
			return changed, err
		}
		changed = true
	}
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || want[path] {
			return err
		}
		changed = true
		return os.Remove(path)
	})
	return changed, err
}

// fieldValue answers a downward-API field path.
func fieldValue(pod *corev1.Pod, path string) (string, error) {
	switch path {
	case "metadata.name":
		return pod.Name, nil
	case "metadata.namespace":
		return pod.Namespace, nil
	case "metadata.uid":
		return string(pod.UID), nil
	case "spec.serviceAccountName":
		return pod.Spec.ServiceAccountName, nil
	case "spec.nodeName":
		return nodeName, nil
	case "status.podIP", "status.hostIP":
		return pod.Status.PodIP, nil
	case "metadata.labels":
		return formatMap(pod.Labels), nil
	case "metadata.annotations":
		return formatMap(pod.Annotations), nil
	}
	if key, ok := strings.CutPrefix(path, "metadata.labels['"); ok {
		return pod.Labels[strings.TrimSuffix(key, "']")], nil
	}
	if key, ok := strings.CutPrefix(path, "metadata.annotations['"); ok {
		return pod.Annotations[strings.TrimSuffix(key, "']")], nil
	}
	return "", fmt.Errorf("field path %q is not supported", path)
}

func formatMap(m map[string]string) string {
	var b strings.Builder
	for k, v := range m {
		q, _ := json.Marshal(v)
		fmt.Fprintf(&b, "%s=%s\n", k, q)
	}
	return b.String()
}

// env resolves a container's environment.
func (r *Runner) env(ctx context.Context, pod *corev1.Pod, c *corev1.Container) ([]string, error) {
	vars := map[string]string{}
	var order []string
	set := func(k, v string) {
		if _, ok := vars[k]; !ok {
			order = append(order, k)
		}
		vars[k] = v
	}
	for _, from := range c.EnvFrom {
		var data map[string][]byte
		var err error
		switch {
		case from.SecretRef != nil:
			data, err = r.secretData(ctx, pod.Namespace, from.SecretRef.Name, ptr.Deref(from.SecretRef.Optional, false))
		case from.ConfigMapRef != nil:
			data, err = r.configMapData(ctx, pod.Namespace, from.ConfigMapRef.Name, ptr.Deref(from.ConfigMapRef.Optional, false))
		}
		if err != nil {
			return nil, err
		}
		for k, v := range data {
			set(from.Prefix+k, string(v))
		}
	}
	for _, e := range c.Env {
		var v string
		var err error
		switch {
		case e.ValueFrom == nil:
			v = expand(e.Value, vars)
		case e.ValueFrom.FieldRef != nil:
			v, err = fieldValue(pod, e.ValueFrom.FieldRef.FieldPath)
		case e.ValueFrom.SecretKeyRef != nil:
			ref := e.ValueFrom.SecretKeyRef
			v, err = r.key(ctx, pod.Namespace, "secret", ref.Name, ref.Key, ref.Optional, r.secretData)
		case e.ValueFrom.ConfigMapKeyRef != nil:
			ref := e.ValueFrom.ConfigMapKeyRef
			v, err = r.key(ctx, pod.Namespace, "configmap", ref.Name, ref.Key, ref.Optional, r.configMapData)
		case e.ValueFrom.ResourceFieldRef != nil:
			v = "0"
		}
		if err != nil {
			return nil, fmt.Errorf("env %s: %w", e.Name, err)
		}
		set(e.Name, v)
	}
	out := make([]string, 0, len(order))
	for _, k := range order {
		out = append(out, k+"="+vars[k])
	}
	return out, nil
}

// key reads one key of a Secret or ConfigMap for an env var; a missing
// required key keeps the pod waiting, as the kubelet does.
func (r *Runner) key(ctx context.Context, ns, kind, name, key string, optional *bool,
	read func(context.Context, string, string, bool) (map[string][]byte, error)) (string, error) {
	data, err := read(ctx, ns, name, ptr.Deref(optional, false))
	if err != nil {
		return "", err
	}
	v, ok := data[key]
	if !ok && !ptr.Deref(optional, false) {
		return "", errWaiting{fmt.Sprintf("key %q missing from %s %q", key, kind, name)}
	}
	return string(v), nil
}

// expand replaces $(VAR) references to variables defined before, as the
// kubelet does for env values, commands and arguments; $$( escapes.
func expand(s string, vars map[string]string) string {
	var b strings.Builder
	for {
		i := strings.Index(s, "$(")
		if i < 0 {
			b.WriteString(s)
			return b.String()
		}
		if i > 0 && s[i-1] == '$' {
			b.WriteString(s[:i-1] + "$(")
			s = s[i+2:]
			continue
		}
		j := strings.IndexByte(s[i:], ')')
		if j < 0 {
			b.WriteString(s)
			return b.String()
		}
		name := s[i+2 : i+j]
		b.WriteString(s[:i])
		if v, ok := vars[name]; ok {
			b.WriteString(v)
		} else {
			b.WriteString(s[i : i+j+1])
		}
		s = s[i+j+1:]
	}
}
