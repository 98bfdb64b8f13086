// Package local runs the shared end-to-end scenarios (e2e/scenarios) of the
// real OCM flow on local control planes, each with one real node (kubelet
// and containerd: e2e/harness/nodes): the OCM hub installed with
// `clusteradm init`, clusters joined with `clusteradm join` (Default mode,
// and Hosted mode on a third cluster), and the hostfleet-agent add-on
// enabled with `clusteradm addon enable`, rendered by the hub's add-on
// manager, applied by the OCM work agent and run by the nodes, as every pod
// of OCM and of Hostfleet, from its image (served by an in-process
// registry). No container engine is involved. Run them with
// `make e2e-local`; `make test` runs them too. They need Linux and root.
package local
