// Package monitoring holds the monitoring suite: a real Prometheus
// (Debian's, which hack/tools.sh installs) scrapes a hub and an agent, run
// as processes from their binaries, through their authenticated HTTPS
// metrics endpoints, evaluates the PrometheusRule's alerts, and fires one
// for a real stuck claim, which resolves once the claim binds. It starts
// control-plane processes and Prometheus; no root needed.
package monitoring
