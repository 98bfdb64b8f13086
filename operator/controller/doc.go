// Package controller installs, upgrades and uninstalls a Hostfleet hub from
// a HostfleetHub: in Default mode on the cluster the HostfleetHub is on, in
// Hosted mode on a hub reached through the external-hub-kubeconfig Secret,
// with the hub's controllers on the hosting cluster.
package controller
