// Package planes starts several real Kubernetes control planes (kube-apiserver
// and etcd, through controller-runtime's envtest) in one process, installs the
// Hostfleet, metal3 and OCM CRDs on each, and can run a real baremetal-operator
// in test mode against any of them. Tests of every package use it when a flow
// crosses clusters: a hub and one or more infrastructure clusters.
//
// The binaries come from the tool cache that hack/tools.sh fills: from
// KUBEBUILDER_ASSETS and HOSTFLEET_BMO when they are set (the Makefile sets
// them), else from the cache itself, so a plain `go test ./...` works once
// the tools are built.
package planes
