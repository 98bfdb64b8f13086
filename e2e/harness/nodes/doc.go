// Package nodes gives the local control planes real nodes: Debian's
// containerd, runc and CNI plugins, and a kubelet and kube-proxy built from
// k8s.io/kubernetes at the pinned version (hack/tools.sh node). It is test
// infrastructure for the local end-to-end tests; it needs Linux, root and a
// writable cgroup v1 hierarchy.
//
// A node is:
//
//   - a network namespace (hf-<node>) joined to the host by a veth pair:
//     the host end 10.198.<index>.1, the node's eth0 10.198.<index>.2, its
//     default route through the host; the host routes the node's pod range
//     10.200.<index>.0/24 to it. Everything the node's pods reach on the host
//     (the planes' API servers, the image registry, the BMC emulators)
//     listens on HostAddress, an address on the host's loopback;
//   - a private mount namespace, kept by a holder process, with tmpfs over
//     /run, /var/lib and /var/log, so that the paths kubelet and containerd
//     keep whatever their flags say (device-plugin sockets, CNI results,
//     pod network namespaces, shim sockets) are the node's own;
//   - containerd in both namespaces, its content and snapshots in the node's
//     directory, pulling every image from the in-process registry through
//     its mirror configuration (hosts.toml per upstream registry), the pod
//     sandbox a locally built pause image; CNI bridge networking (cni0,
//     host-local addresses); restrict_oom_score_adj (no CAP_SYS_RESOURCE
//     here);
//   - kubelet in both namespaces: cgroupfs under a cgroup root of its own
//     (/hostfleet-<node>) on cgroup v1 (failCgroupV1: false), x509 clients of
//     the plane's CA only, pod logs in the node's directory; kube-proxy
//     (iptables) in both namespaces.
//
// Stop kills every process of the node (its namespaces' and its cgroups'),
// removes its cgroups and its network namespace; Leftovers says what of a
// stopped node remains. PrepareHost puts HostAddress on the loopback and
// records the kernel settings kubelet changes; its undo restores them.
package nodes
