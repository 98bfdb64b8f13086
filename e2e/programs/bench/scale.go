package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hostfleet/hostfleet/e2e/harness/planes"
)

// scaleTenant and scaleNS are the one tenant of the scale benchmark.
const scaleTenant, scaleNS = "fleet", "tenant-fleet"

// scaleResult is one run of the scale benchmark.
type scaleResult struct {
	clusters, claims int
	setup, elapsed   time.Duration
	// scheduling and ready are created→Scheduled and created→Ready.
	scheduling, ready [2]time.Duration // p50, p99
	hubServer         planes.Usage     // CPU over the claims, memory at the end
	hubController     planes.Usage
	// agents is this process's CPU (every agent); infraServers the
	// infrastructure planes' API servers'.
	agents, infraServers time.Duration
	// serverGC and agentsGC are what the hub API server's and this
	// process's garbage collectors took of their CPU.
	serverGC, agentsGC time.Duration
	// requests are the hub API server's requests (all clients, WATCH
	// excluded) over the claims, by verb.
	requests map[string]float64
	// watches ended (and were opened again) on the hub during the claims,
	// and the watchers among them the hub API server closed for falling
	// behind: a watcher that does not take its events in time holds up
	// every other's.
	watches, terminated float64
	// terminatedBy splits terminated by resource; byResource the requests
	// by verb and resource.
	terminatedBy, byResource map[string]float64
	// claimCache is the capacity of the hub API server's watch cache of
	// claims, in events, when the claims began and at the end: a watch
	// opened on it gets a buffer of capacity/75 events, from 10 to 100, for
	// as long as it lasts.
	claimCache [2]float64
	// slowCreates are claim creates the hub API server took over 1 s to
	// serve, slowEtcd its etcd requests over 1 s: a stall the server
	// measured, not its clients.
	slowCreates, slowEtcd float64
	// tenantBytes are the bytes of Tenant events sent to the hub's watchers.
	tenantBytes float64
	// agentHeap is this process's live heap once every agent has started,
	// per cluster: what a simulated agent holds.
	agentHeap int64
	// idle is the hub's CPU (API server and controller) over idleWindow
	// before the claims; window is how long the claims were measured.
	idle, window time.Duration
	// late are the claims placed more than 1 s after their creation.
	late int
	// setupRSS is the hub API server's resident memory before the claims;
	// objects and objectBytes what it stores at the end, by resource.
	setupRSS             int64
	objects, objectBytes map[string]float64
	// observerWaited is the longest a goroutine of the process that
	// creates and watches the claims waited to run: a measure of the
	// measurement.
	observerWaited time.Duration
}

// runScale runs the scale benchmark at each number of clusters and prints
// the runs side by side.
// hubPprof is the hub controller's --pprof-bind-address in scale runs.
var hubPprof = flag.String("scale-hub-pprof", "0", "scale: the hub controller's --pprof-bind-address (e.g. localhost:6061; 0: none)")

// scaleClaims caps the claims of a run: where the machine cannot keep up
// with one claim per host at the largest sizes.
var scaleClaims = flag.Int("scale-claims", 0, "scale: claims per run, at most (0: one per host)")

// scaleClaimWatch is the agents' --claim-watch in scale runs; the hub writes
// PlacedClaims only for "placed".
var scaleClaimWatch = flag.String("scale-claim-watch", "placed", "scale: the agents' --claim-watch, label or placed (the hub writes PlacedClaims only for placed)")

// scaleAgentCores caps the cores the simulated agents' process runs on
// while the claims are made: a fleet's agents run on their own clusters,
// never on the hub's cores, and on a small machine their garbage collector
// (whose idle workers take every core the Go scheduler sees idle) would
// otherwise take the hub's.
var scaleAgentCores = flag.Int("scale-agent-cores", 1, "scale: GOMAXPROCS of this process, which runs the agents, while the claims are made (0: unchanged)")

// scaleFleetNice is the nice value of what simulates the fleet while the
// claims are made: the infrastructure planes and this process.
var scaleFleetNice = flag.Int("scale-fleet-nice", 0, "scale: while the claims are made, run the infrastructure planes and this process (the agents) at this nice value, so that they take only the CPU the hub leaves (0: as started; lowering it back needs CAP_SYS_NICE)")

// reniceFleet sets the nice value of the infrastructure planes and of this
// process.
func (b *scaleBench) reniceFleet(nice int) error {
	for _, name := range b.names[1:] {
		if err := b.f.Plane(name).Renice(nice); err != nil {
			return err
		}
	}
	return planes.ReniceProcess(os.Getpid(), nice)
}

// agentCores says what the agents' process runs on while the claims are made.
func agentCores() string {
	if *scaleAgentCores > 0 {
		return fmt.Sprintf("%d of %d cores", min(*scaleAgentCores, runtime.NumCPU()), runtime.NumCPU())
	}
	return fmt.Sprintf("all %d cores", runtime.NumCPU())
}

func runScale(clusterCounts []int, hostsPer, infraPlanes int, rate float64, hubBin string) error {
	var results []scaleResult
	for _, c := range clusterCounts {
		fmt.Printf("\nscale: %d clusters × %d hosts on %d infrastructure planes, %d claims at %.0f/s, claim watch %s, agents on %s, fleet at nice %d, OCM registration's bindings %t\n", c, hostsPer, infraPlanes, claimsOf(c, hostsPer), rate, *scaleClaimWatch, agentCores(), *scaleFleetNice, *scaleOCMBindings)
		r, err := scaleRun(c, hostsPer, infraPlanes, rate, hubBin)
		if err != nil {
			return fmt.Errorf("%d clusters: %w", c, err)
		}
		results = append(results, r)
		printScale(results)
	}
	return nil
}

func printScale(rs []scaleResult) {
	row := func(name string, f func(r scaleResult) string) {
		fmt.Printf("  %-40s", name)
		for _, r := range rs {
			fmt.Printf(" %18s", f(r))
		}
		fmt.Println()
	}
	fmt.Println()
	row("clusters", func(r scaleResult) string { return strconv.Itoa(r.clusters) })
	row("claims", func(r scaleResult) string { return strconv.Itoa(r.claims) })
	row("setup (planes, clusters, agents)", func(r scaleResult) string { return r.setup.Round(time.Second).String() })
	row("all claims Ready after", func(r scaleResult) string { return r.elapsed.Round(100 * time.Millisecond).String() })
	row("scheduling p50 / p99", func(r scaleResult) string { return pair(r.scheduling) })
	row("created → Ready p50 / p99", func(r scaleResult) string { return pair(r.ready) })
	row("placed over 1 s after creation", func(r scaleResult) string { return strconv.Itoa(r.late) })
	row("hub idle (API server + controller)", func(r scaleResult) string {
		return fmt.Sprintf("%.3f cores", r.idle.Seconds()/idleWindow.Seconds())
	})
	row("hub CPU per claim, idle subtracted", func(r scaleResult) string { return r.hubPerClaim().Round(10 * time.Microsecond).String() })
	row("  ratio to the first run", func(r scaleResult) string {
		return fmt.Sprintf("%.2f", r.hubPerClaim().Seconds()/rs[0].hubPerClaim().Seconds())
	})
	row("hub API server RSS per cluster, before", func(r scaleResult) string {
		return fmt.Sprintf("%.2f MiB", float64(r.setupRSS)/float64(r.clusters)/(1<<20))
	})
	row("hub API server objects per cluster, after", func(r scaleResult) string {
		return fmt.Sprintf("%.1f, %.1f kB", total(r.objects)/float64(r.clusters), total(r.objectBytes)/float64(r.clusters)/1e3)
	})
	row("hub API server CPU per claim", func(r scaleResult) string {
		return (r.hubServer.CPU / time.Duration(r.claims)).Round(10 * time.Microsecond).String()
	})
	row("  of it, its garbage collector's", func(r scaleResult) string {
		return (r.serverGC / time.Duration(r.claims)).Round(10 * time.Microsecond).String()
	})
	row("hub API server RSS (peak)", func(r scaleResult) string { return mib(r.hubServer.RSS) + " (" + mib(r.hubServer.PeakRSS) + ")" })
	row("hub controller CPU per claim", func(r scaleResult) string {
		return (r.hubController.CPU / time.Duration(r.claims)).Round(10 * time.Microsecond).String()
	})
	row("agents' CPU per claim (all, one process)", func(r scaleResult) string {
		return (r.agents / time.Duration(r.claims)).Round(10 * time.Microsecond).String()
	})
	row("  of it, their garbage collector's", func(r scaleResult) string {
		return (r.agentsGC / time.Duration(r.claims)).Round(10 * time.Microsecond).String()
	})
	row("infrastructure API servers' CPU per claim", func(r scaleResult) string {
		return (r.infraServers / time.Duration(r.claims)).Round(10 * time.Microsecond).String()
	})
	row("agents' live heap per cluster", func(r scaleResult) string { return fmt.Sprintf("%.2f MB", float64(r.agentHeap)/1e6) })
	row("hub controller RSS (peak)", func(r scaleResult) string {
		return mib(r.hubController.RSS) + " (" + mib(r.hubController.PeakRSS) + ")"
	})
	printRequests(rs, row)
}

// printRequests prints what the hub API server served per claim, and what
// it holds per cluster after the last run.
func printRequests(rs []scaleResult, row func(name string, f func(r scaleResult) string)) {
	verbs := []string{}
	for _, r := range rs {
		for v := range r.requests {
			if !slices.Contains(verbs, v) {
				verbs = append(verbs, v)
			}
		}
	}
	slices.Sort(verbs)
	row("hub API requests per claim", func(r scaleResult) string {
		total := 0.0
		for _, v := range r.requests {
			total += v
		}
		return fmt.Sprintf("%.1f", total/float64(r.claims))
	})
	for _, v := range verbs {
		row("  "+v, func(r scaleResult) string { return fmt.Sprintf("%.2f", r.requests[v]/float64(r.claims)) })
	}
	row("hub watches ended, closed for falling behind", func(r scaleResult) string {
		return fmt.Sprintf("%.0f, %.0f%s", r.watches, r.terminated, byResource(r.terminatedBy))
	})
	row("hub watch cache of claims, events (start, end)", func(r scaleResult) string {
		return fmt.Sprintf("%.0f, %.0f", r.claimCache[0], r.claimCache[1])
	})
	row("hub claim creates over 1 s; etcd requests over 1 s", func(r scaleResult) string {
		return fmt.Sprintf("%.0f; %.0f", r.slowCreates, r.slowEtcd)
	})
	row("Tenant events sent to the hub's watchers", func(r scaleResult) string { return fmt.Sprintf("%.0f MB", r.tenantBytes/1e6) })
	row("observer's goroutines waited to run, at most", func(r scaleResult) string { return r.observerWaited.String() })
	last := rs[len(rs)-1]
	fmt.Printf("\n  hub objects per cluster at %d clusters, after the claims: %s\n", last.clusters, perUnit(last.objects, last.clusters))
	fmt.Printf("  their bytes per cluster (estimated, as stored): %s\n", perUnit(last.objectBytes, last.clusters))
	fmt.Printf("  hub API requests per claim at %d clusters: %s\n", last.clusters, perUnit(last.byResource, last.claims))
}

// perUnit is the counts over n, most first, those of at least 0.1.
func perUnit(counts map[string]float64, n int) string {
	some := map[string]float64{}
	for k, v := range counts {
		if v/float64(n) >= 0.1 {
			some[k] = v
		}
	}
	return perN(some, n)
}

// hubPerClaim is the hub's CPU (API server and controller) per claim,
// its idle background over the same time subtracted.
func (r scaleResult) hubPerClaim() time.Duration {
	background := time.Duration(float64(r.idle) * r.window.Seconds() / idleWindow.Seconds())
	return (r.hubServer.CPU + r.hubController.CPU - background) / time.Duration(r.claims)
}

func total(m map[string]float64) float64 {
	t := 0.0
	for _, v := range m {
		t += v
	}
	return t
}

func pair(d [2]time.Duration) string {
	return d[0].Round(time.Millisecond).String() + " / " + d[1].Round(time.Millisecond).String()
}

func mib(b int64) string { return fmt.Sprintf("%d MiB", b>>20) }

// scaleBench is one run of the scale benchmark while it runs: the planes,
// the hub controller's process and the clusters' agent identities.
type scaleBench struct {
	clusters, hostsPer, infraPlanes int
	names                           []string
	f                               *planes.Fleet
	hubPlane                        *planes.Plane
	hub                             client.Client
	hubCmd                          *exec.Cmd
	hubOut                          bytes.Buffer
	agentCfgs                       []*rest.Config
	// hubAsServiceAccount runs the hub controller as its ServiceAccount's
	// user rather than the administrator (exempt from priority and
	// fairness).
	hubAsServiceAccount bool
}

func (b *scaleBench) clusterName(i int) string { return fmt.Sprintf("c%04d", i) }
func (b *scaleBench) infraOf(i int) *planes.Plane {
	return b.f.Plane(fmt.Sprintf("infra-%d", i%b.infraPlanes+1))
}

// hubFailed adds the tail of the hub controller's output to err.
func (b *scaleBench) hubFailed(err error) error {
	return fmt.Errorf("%w\nhub: %s", err, tail(b.hubOut.String()))
}

// claimsOf is the number of claims of a run: one per host, or -scale-claims.
func claimsOf(clusters, hostsPer int) int {
	if *scaleClaims > 0 {
		return min(*scaleClaims, clusters*hostsPer)
	}
	return clusters * hostsPer
}

func scaleRun(clusters, hostsPer, infraPlanes int, rate float64, hubBin string) (scaleResult, error) {
	res := scaleResult{clusters: clusters, claims: claimsOf(clusters, hostsPer)}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	began := time.Now()
	b := &scaleBench{clusters: clusters, hostsPer: hostsPer, infraPlanes: infraPlanes, names: []string{"hub"}}
	for i := 1; i <= infraPlanes; i++ {
		b.names = append(b.names, fmt.Sprintf("infra-%d", i))
	}
	stop, err := b.start(ctx, hubBin)
	if err != nil {
		return res, err
	}
	defer stop()
	if err := b.setUpClusters(ctx); err != nil {
		return res, err
	}
	if err := b.startAgents(ctx); err != nil {
		return res, err
	}
	res.setup = time.Since(began)
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	res.agentHeap = int64(ms.HeapAlloc) / int64(clusters)
	obs, tl, err := b.measure(ctx, &res, rate)
	if err != nil {
		return res, err
	}
	b.latencies(&res, obs, tl)
	return res, nil
}

// parseCounts parses "100,1000".
func parseCounts(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return nil, errors.New("-scale-clusters takes counts such as 100,1000")
		}
		out = append(out, n)
	}
	return out, nil
}
