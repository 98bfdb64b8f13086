package kubectl

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	metal3api "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/duration"
	addonv1beta1 "open-cluster-management.io/api/addon/v1beta1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hostfleet/hostfleet/hub/api/advice"
	hostfleetv1alpha1 "github.com/hostfleet/hostfleet/hub/api/v1alpha1"
)

// Step is one step of a claim's path and whether it is done.
type Step struct {
	Name string
	// Done: the step is done; Skipped: it does not apply to the claim.
	Done, Skipped bool
	// Reason and Message say where the step stands, from the claim's
	// condition (or, without one, what is awaited).
	Reason, Message string
}

// Path is a claim's path, step by step: scheduled, forwarded (remote
// claims), bound, synchronized, provisioned (with an image), powered, Ready,
// labels on its Node (with a workload cluster). Pure: from the claim alone.
func Path(c *metal3api.HostClaim) []Step {
	cond := func(name, t string, awaited string) Step {
		s := Step{Name: name, Message: awaited}
		if k := meta.FindStatusCondition(c.Status.Conditions, t); k != nil {
			s.Done, s.Reason, s.Message = k.Status == metav1.ConditionTrue, k.Reason, k.Message
		}
		return s
	}
	cluster := c.Labels[hostfleetv1alpha1.LabelCluster]
	scheduled := cond("scheduled", hostfleetv1alpha1.ConditionScheduled, "the hub scheduler has not placed the claim yet")
	if !scheduled.Done && scheduled.Reason == "" && cluster != "" {
		scheduled = Step{Name: "scheduled", Done: true, Message: "on " + cluster}
	}
	steps := []Step{scheduled}
	if c.Labels[hostfleetv1alpha1.LabelKind] == hostfleetv1alpha1.KindRemote {
		fwd := cond("forwarded", hostfleetv1alpha1.ConditionForwarded, "the hub has not forwarded the claim to "+dash(cluster)+" yet")
		fwd.Done = fwd.Done && fwd.Reason == hostfleetv1alpha1.ReasonTargetBound
		steps = append(steps, fwd)
	}
	agent := "the agent of " + dash(cluster) + " has not reported it yet"
	steps = append(steps,
		cond("bound", hostfleetv1alpha1.ConditionAssociated, agent),
		cond("synchronized", hostfleetv1alpha1.ConditionSynchronized, agent))
	prov := cond("provisioned", hostfleetv1alpha1.ConditionProvisioned, agent)
	if c.Spec.Image == nil && c.Spec.CustomDeploy == nil {
		prov = Step{Name: "provisioned", Skipped: true, Message: "no image asked"}
	}
	steps = append(steps, prov, powered(c), cond("ready", hostfleetv1alpha1.ConditionReady, agent))
	labels := cond("node labels", hostfleetv1alpha1.ConditionNodeLabelsSynced, "")
	if labels.Reason == "" {
		labels = Step{Name: "node labels", Skipped: true, Message: "no workload cluster syncs this claim's labels"}
	}
	return append(steps, labels)
}

// powered: the host's power is what the claim asks. Ready's reason says
// what is under way when it is not.
func powered(c *metal3api.HostClaim) Step {
	want := map[bool]string{true: "on", false: "off"}
	s := Step{Name: "powered", Done: c.Status.PoweredOn == c.Spec.PoweredOn,
		Message: fmt.Sprintf("the host is %s, the claim asks %s", want[c.Status.PoweredOn], want[c.Spec.PoweredOn])}
	if r := meta.FindStatusCondition(c.Status.Conditions, hostfleetv1alpha1.ConditionReady); !s.Done && r != nil {
		s.Reason, s.Message = r.Reason, r.Message
	}
	return s
}

// Stuck is the first step of steps not done, if any.
func Stuck(steps []Step) (Step, bool) {
	for _, s := range steps {
		if !s.Done && !s.Skipped {
			return s, true
		}
	}
	return Step{}, false
}

func whyFlags(fs *pflag.FlagSet) func(context.Context, *Env, []string) error {
	events := fs.Int("events", 5, "how many of the latest Events to print")
	return func(ctx context.Context, env *Env, args []string) error {
		if len(args) != 1 {
			return fmt.Errorf("why takes one claim: kubectl hostfleet why CLAIM [-n NAMESPACE]")
		}
		return why(ctx, env, args[0], *events)
	}
}

func why(ctx context.Context, env *Env, name string, events int) error {
	c := &metal3api.HostClaim{}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: env.Namespace, Name: name}, c); err != nil {
		if apierrors.IsNotFound(err) {
			return fmt.Errorf("no HostClaim %s in namespace %s%s: `kubectl hostfleet claims -n %s` lists them",
				name, env.Namespace, quotaNote(ctx, env.Client, env.Namespace), env.Namespace)
		}
		return explain(err, "get", "hostclaims", env.Namespace)
	}
	out := env.Out
	fmt.Fprintf(out, "HostClaim %s/%s", c.Namespace, c.Name)
	if cl := c.Labels[hostfleetv1alpha1.LabelCluster]; cl != "" {
		fmt.Fprintf(out, " on %s", cl)
	}
	if h := c.Status.BareMetalHost; h != nil {
		fmt.Fprintf(out, ", host %s/%s", h.Namespace, h.Name)
	}
	fmt.Fprintln(out)
	steps := Path(c)
	stuck, isStuck := Stuck(steps)
	for _, s := range steps {
		mark := "[ok]"
		switch {
		case s.Skipped:
			mark = "[  ]"
		case !s.Done:
			mark = "[!!]"
		}
		fmt.Fprintf(out, "  %s %-13s %s\n", mark, s.Name, summary(s))
		if isStuck && s.Name == stuck.Name {
			break
		}
	}
	if !c.DeletionTimestamp.IsZero() {
		fmt.Fprintf(out, "\nThe claim is being deleted: its host is released first (%s).\n", strings.Join(c.Finalizers, ", "))
	}
	if isStuck {
		printAdvice(out, stuck)
	} else {
		fmt.Fprintln(out, "\nNothing in the way: the claim is Ready.")
	}
	printHardware(ctx, out, env.Client, c)
	printEvents(ctx, out, env.Client, c, events)
	printAgent(ctx, out, env.Client, c.Labels[hostfleetv1alpha1.LabelCluster])
	return nil
}

func summary(s Step) string {
	if s.Reason == "" {
		return s.Message
	}
	return s.Reason + ": " + s.Message
}

// printAdvice says what the stuck step's reason means and what to do.
func printAdvice(out io.Writer, s Step) {
	fmt.Fprintf(out, "\nStuck at %q", s.Name)
	if s.Reason == "" {
		fmt.Fprintf(out, ": %s.\n", s.Message)
		return
	}
	fmt.Fprintf(out, " (%s).\n", s.Reason)
	a, ok := advice.For(s.Reason)
	if !ok {
		fmt.Fprintf(out, "  %s is not a reason Hostfleet writes (another controller's?): read the message above.\n", s.Reason)
		return
	}
	fmt.Fprintf(out, "  cause: %s\n  next:  %s\n", plain(a.Cause), plain(a.Fix))
}

// plain drops the Markdown backquotes of advice for a terminal.
func plain(s string) string { return strings.ReplaceAll(s, "`", "") }

// printEvents prints the latest Events on the claim, or why it cannot.
func printEvents(ctx context.Context, out io.Writer, c client.Client, claim *metal3api.HostClaim, n int) {
	var list corev1.EventList
	if err := c.List(ctx, &list, client.InNamespace(claim.Namespace), client.MatchingFields{"involvedObject.uid": string(claim.UID)}); err != nil {
		fmt.Fprintf(out, "\nEvents: not shown (%v)\n", explain(err, "list", "events", claim.Namespace))
		return
	}
	evs := list.Items
	last := func(e corev1.Event) time.Time {
		return slices.MaxFunc([]time.Time{e.LastTimestamp.Time, e.EventTime.Time, e.CreationTimestamp.Time}, func(a, b time.Time) int { return a.Compare(b) })
	}
	slices.SortFunc(evs, func(a, b corev1.Event) int { return last(a).Compare(last(b)) })
	if len(evs) > n {
		evs = evs[len(evs)-n:]
	}
	fmt.Fprintf(out, "\nEvents (latest %d):\n", len(evs))
	if len(evs) == 0 {
		fmt.Fprintln(out, "  none")
	}
	for _, e := range evs {
		fmt.Fprintf(out, "  %-5s %-7s %-24s %s\n", duration.HumanDuration(time.Since(last(e))), e.Type, e.Reason, e.Message)
	}
}

// printAgent prints whether the agent of the claim's cluster is Available,
// for a caller who may read its ManagedClusterAddOn.
func printAgent(ctx context.Context, out io.Writer, c client.Client, cluster string) {
	if cluster == "" {
		return
	}
	mca := &addonv1beta1.ManagedClusterAddOn{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: cluster, Name: hostfleetv1alpha1.AddonName}, mca); err != nil {
		if apierrors.IsNotFound(err) {
			fmt.Fprintf(out, "\nAgent of %s: the hostfleet-agent add-on is not enabled there (clusteradm addon enable --names hostfleet-agent --clusters %s)\n", cluster, cluster)
		}
		return // a tenant admin may not read it: nothing to say
	}
	a := meta.FindStatusCondition(mca.Status.Conditions, addonv1beta1.ManagedClusterAddOnConditionAvailable)
	if a == nil {
		fmt.Fprintf(out, "\nAgent of %s: no health reported yet\n", cluster)
		return
	}
	fmt.Fprintf(out, "\nAgent of %s: Available=%s (%s: %s)\n", cluster, a.Status, a.Reason, a.Message)
}

// quotaNote, for a claim not found, says when its tenant's quota is full
// (a claim over maxClaims is refused at creation).
func quotaNote(ctx context.Context, c client.Client, ns string) string {
	q := &corev1.ResourceQuota{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: hostfleetv1alpha1.TenantQuota}, q); err != nil {
		return ""
	}
	used, hard := q.Status.Used[corev1.ResourceName(hostfleetv1alpha1.QuotaClaims)], q.Status.Hard[corev1.ResourceName(hostfleetv1alpha1.QuotaClaims)]
	if hard.IsZero() || used.Cmp(hard) < 0 {
		return ""
	}
	return fmt.Sprintf(" (its tenant uses %s of its %s claims, maxClaims: a new claim is refused until one is deleted or maxClaims is raised)", used.String(), hard.String())
}
