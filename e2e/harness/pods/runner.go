//go:build linux

package pods

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

// Options configure a Runner.
type Options struct {
	// Name names the plane in logs.
	Name string
	// Config reaches the plane as an administrator.
	Config *rest.Config
	// Registry (host:port, plain HTTP) serves every image, laid out as a
	// pull-through mirror: ghcr.io/x/y:v at <Registry>/ghcr.io/x/y:v (see
	// the registry package).
	Registry string
	// ImageCache receives unpacked images, one directory per digest;
	// runners may share it (default Dir/images).
	ImageCache string
	// ForwardPorts are host loopback ports every pod reaches at the same
	// port on its own loopback: the planes' API servers.
	ForwardPorts []int
	// ForwardUDPPorts are host loopback UDP ports every pod reaches at the
	// same port on its own loopback: BMC emulators (IPMI).
	ForwardUDPPorts []int
	// Dir receives the pods' roots, volumes and logs.
	Dir string
	// Logf receives the runner's own messages; nil discards them.
	Logf func(format string, args ...any)
}

// Runner runs a plane's Deployments as processes.
type Runner struct {
	opts    Options
	client  client.Client
	direct  client.Client // uncached: volumes and env read what was just written
	apiPort int

	tokens sync.Map // pod token cache: key -> cachedToken

	mu   sync.Mutex
	pods map[types.NamespacedName][]*pod // by Deployment
	logs []string

	cancel context.CancelFunc
	done   chan error
}

// Start starts a runner; Stop ends it and every pod it runs.
func Start(ctx context.Context, opts Options) (*Runner, error) {
	u, err := url.Parse(opts.Config.Host)
	if err != nil {
		return nil, fmt.Errorf("pod runner %s: API server address: %w", opts.Name, err)
	}
	port, err := strconv.Atoi(u.Port())
	if err != nil {
		return nil, fmt.Errorf("pod runner %s: API server port in %q: %w", opts.Name, opts.Config.Host, err)
	}
	if err := os.MkdirAll(opts.Dir, 0o755); err != nil {
		return nil, err
	}
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return nil, err
	}
	mgr, err := ctrl.NewManager(opts.Config, ctrl.Options{
		Scheme:  scheme,
		Metrics: metricsserver.Options{BindAddress: "0"},
		Logger:  logger(opts),
	})
	if err != nil {
		return nil, err
	}
	r := &Runner{opts: opts, client: mgr.GetClient(), apiPort: port, pods: map[types.NamespacedName][]*pod{}, done: make(chan error, 1)}
	// Reads for volumes and env go straight to the API server: a Secret
	// written a moment ago must be seen, and the cache would hold every
	// Secret of the plane.
	if r.direct, err = client.New(opts.Config, client.Options{Scheme: scheme}); err != nil {
		return nil, err
	}
	if err := ctrl.NewControllerManagedBy(mgr).Named("pods-deployments").For(&appsv1.Deployment{}).
		WithOptions(ctrlOptions()).Complete(reconcilerFunc(r.reconcileDeployment)); err != nil {
		return nil, err
	}
	if err := ctrl.NewControllerManagedBy(mgr).Named("pods-services").For(&corev1.Service{}).
		WithOptions(ctrlOptions()).Complete(reconcilerFunc(r.reconcileService)); err != nil {
		return nil, err
	}
	ctx, r.cancel = context.WithCancel(ctx)
	go func() { r.done <- mgr.Start(ctx) }()
	return r, nil
}

// Stop stops the runner and its pods. Pod objects are left to the plane.
func (r *Runner) Stop() {
	r.cancel()
	<-r.done
	r.mu.Lock()
	var all []*pod
	for _, ps := range r.pods {
		all = append(all, ps...)
	}
	r.pods = map[types.NamespacedName][]*pod{}
	r.mu.Unlock()
	var wg sync.WaitGroup
	for _, p := range all {
		wg.Add(1)
		go func() { defer wg.Done(); p.stop() }()
	}
	wg.Wait()
}

// Logs are the container log files written so far.
func (r *Runner) Logs() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.logs...)
}

// Running lists the pods running for a Deployment, by name.
func (r *Runner) Running(namespace, deployment string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var names []string
	for _, p := range r.pods[types.NamespacedName{Namespace: namespace, Name: deployment}] {
		names = append(names, p.name)
	}
	return names
}

func (r *Runner) logf(format string, args ...any) {
	if r.opts.Logf != nil {
		r.opts.Logf("[pods %s] "+format, append([]any{r.opts.Name}, args...)...)
	}
}

// templateHash names a pod template's revision, as pod-template-hash does.
func templateHash(t *corev1.PodTemplateSpec) string {
	b, _ := json.Marshal(t)
	h := fnv.New32a()
	_, _ = h.Write(b)
	return strconv.FormatUint(uint64(h.Sum32()), 36)
}

func (r *Runner) reconcileDeployment(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	d := &appsv1.Deployment{}
	err := r.client.Get(ctx, req.NamespacedName, d)
	if apierrors.IsNotFound(err) || (err == nil && d.DeletionTimestamp != nil) {
		r.scale(ctx, req.NamespacedName, "", 0)
		return ctrl.Result{}, nil
	}
	if err != nil {
		return ctrl.Result{}, err
	}
	hash := templateHash(&d.Spec.Template)
	want := int(ptr.Deref(d.Spec.Replicas, 1))
	if err := r.scale(ctx, req.NamespacedName, hash, want); err != nil {
		return ctrl.Result{}, err
	}
	if err := r.create(ctx, d, hash, want); err != nil {
		return ctrl.Result{}, err
	}
	return ctrl.Result{RequeueAfter: time.Second}, r.deploymentStatus(ctx, d, hash)
}

// scale stops pods of another revision, and pods beyond want.
func (r *Runner) scale(ctx context.Context, key types.NamespacedName, hash string, want int) error {
	r.mu.Lock()
	var keep, drop []*pod
	for _, p := range r.pods[key] {
		if p.hash == hash && len(keep) < want {
			keep = append(keep, p)
		} else {
			drop = append(drop, p)
		}
	}
	r.pods[key] = keep
	r.mu.Unlock()
	var errs []error
	for _, p := range drop {
		p.stop()
		obj := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: p.ns, Name: p.name}}
		if err := r.direct.Delete(ctx, obj, client.GracePeriodSeconds(0)); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// create starts pods until want run.
func (r *Runner) create(ctx context.Context, d *appsv1.Deployment, hash string, want int) error {
	key := client.ObjectKeyFromObject(d)
	for {
		r.mu.Lock()
		have := len(r.pods[key])
		r.mu.Unlock()
		if have >= want {
			return nil
		}
		p, err := r.newPod(ctx, d, hash)
		if err != nil {
			return err
		}
		r.mu.Lock()
		r.pods[key] = append(r.pods[key], p)
		for _, c := range p.containers {
			r.logs = append(r.logs, c.log)
		}
		r.mu.Unlock()
		podCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
		p.cancel = cancel
		go p.run(podCtx)
	}
}

func (r *Runner) newPod(ctx context.Context, d *appsv1.Deployment, hash string) (*pod, error) {
	suffix := make([]byte, 3)
	_, _ = rand.Read(suffix)
	name := fmt.Sprintf("%s-%s-%s", d.Name, hash, hex.EncodeToString(suffix))
	tmpl := d.Spec.Template.DeepCopy()
	obj := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace:   d.Namespace,
			Name:        name,
			Labels:      tmpl.Labels,
			Annotations: tmpl.Annotations,
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "apps/v1", Kind: "Deployment", Name: d.Name, UID: d.UID,
				Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
			}},
		},
		Spec: tmpl.Spec,
	}
	if obj.Labels == nil {
		obj.Labels = map[string]string{}
	}
	obj.Labels["pod-template-hash"] = hash
	if err := r.direct.Create(ctx, obj); err != nil {
		return nil, fmt.Errorf("create pod for deployment %s/%s: %w", d.Namespace, d.Name, err)
	}
	p := &pod{
		r: r, name: name, ns: d.Namespace, hash: hash, ip: nextPodIP(),
		dir: filepath.Join(r.opts.Dir, d.Namespace+"_"+name), obj: obj, done: make(chan struct{}),
		waiting: "starting",
	}
	for i, c := range obj.Spec.Containers {
		p.containers = append(p.containers, &container{
			spec: c,
			log:  filepath.Join(r.opts.Dir, fmt.Sprintf("%s_%s_%s.log", d.Namespace, name, c.Name)),
			dir:  filepath.Join(p.dir, "container-"+strconv.Itoa(i)),
		})
	}
	r.logf("pod %s/%s for deployment %s at %s", d.Namespace, name, d.Name, p.ip)
	return p, nil
}

// podGone forgets a pod whose object was deleted; the next reconcile of its
// Deployment starts another.
func (r *Runner) podGone(gone *pod) {
	r.mu.Lock()
	for key, ps := range r.pods {
		for i, p := range ps {
			if p == gone {
				r.pods[key] = append(ps[:i:i], ps[i+1:]...)
			}
		}
	}
	r.mu.Unlock()
	go gone.stop()
}

func (r *Runner) deploymentStatus(ctx context.Context, d *appsv1.Deployment, hash string) error {
	r.mu.Lock()
	ps := append([]*pod(nil), r.pods[client.ObjectKeyFromObject(d)]...)
	r.mu.Unlock()
	ready := int32(0)
	for _, p := range ps {
		if p.ready() {
			ready++
		}
	}
	want := ptr.Deref(d.Spec.Replicas, 1)
	s := d.Status.DeepCopy()
	s.ObservedGeneration = d.Generation
	s.Replicas = int32(len(ps))
	s.UpdatedReplicas = int32(len(ps))
	s.ReadyReplicas = ready
	s.AvailableReplicas = ready
	s.UnavailableReplicas = max(0, want-ready)
	avail := appsv1.DeploymentCondition{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionTrue,
		Reason: "MinimumReplicasAvailable", Message: "Deployment has minimum availability."}
	if ready < want {
		avail.Status, avail.Reason = corev1.ConditionFalse, "MinimumReplicasUnavailable"
		avail.Message = "Deployment does not have minimum availability."
	}
	progressing := appsv1.DeploymentCondition{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionTrue,
		Reason: "NewReplicaSetAvailable", Message: fmt.Sprintf("Pods of revision %s are running.", hash)}
	s.Conditions = mergeConditions(s.Conditions, avail, progressing)
	if equality.Semantic.DeepEqual(d.Status, *s) {
		return nil
	}
	d.Status = *s
	if err := r.client.Status().Update(ctx, d); err != nil && !apierrors.IsConflict(err) && !apierrors.IsNotFound(err) {
		return err
	}
	return nil
}

func mergeConditions(old []appsv1.DeploymentCondition, conds ...appsv1.DeploymentCondition) []appsv1.DeploymentCondition {
	now := metav1.NewTime(time.Now().Truncate(time.Second))
	var out []appsv1.DeploymentCondition
	for _, c := range conds {
		c.LastUpdateTime, c.LastTransitionTime = now, now
		for _, o := range old {
			if o.Type == c.Type && o.Status == c.Status && o.Reason == c.Reason {
				c.LastUpdateTime, c.LastTransitionTime = o.LastUpdateTime, o.LastTransitionTime
			}
		}
		out = append(out, c)
	}
	return out
}

// podsIn returns the running pods in a namespace, by name.
func (r *Runner) podsIn(namespace string) []*pod {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []*pod
	for key, ps := range r.pods {
		if key.Namespace == namespace {
			out = append(out, ps...)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}
