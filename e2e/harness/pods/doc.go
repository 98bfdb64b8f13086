// Package pods runs the Deployments of a local control plane as processes, so
// that real OCM components and the Hostfleet agent run on the test planes as
// they would on a cluster, without a container engine. It is test
// infrastructure for the local end-to-end tests; it needs Linux and root.
//
// A Runner watches the Deployments of one plane. For each replica it creates
// a Pod object (owned by the Deployment, so garbage collection and namespace
// deletion work), then starts the pod:
//
//   - each container's image pulled from Options.Registry (a pull-through
//     mirror's layout: ghcr.io/x/y:v at <registry>/ghcr.io/x/y:v) for this
//     machine's architecture, unpacked once per digest;
//   - a network namespace of its own (unshare), with loopback up, so container
//     ports never collide across pods. Inside it, every port in
//     Options.ForwardPorts (the planes' API servers) and ForwardUDPPorts (BMC
//     emulators) is forwarded to the same port on the host's loopback, so the
//     in-cluster configuration (KUBERNETES_SERVICE_HOST=127.0.0.1) and
//     kubeconfigs naming https://127.0.0.1:<port> work unchanged;
//   - a pod IP of its own on the host's loopback (127.1.x.y); each container
//     port is forwarded from pod IP and port into the pod. Services that select
//     the pod get an EndpointSlice with that address, which the API server
//     follows for webhooks (--enable-aggregator-routing);
//   - per container, a mount namespace and a root of its own: an overlay of
//     the image with a fresh writable layer per start (read-only under
//     readOnlyRootFilesystem), the host's /dev, the pod's /etc/hosts,
//     /etc/hostname and /etc/resolv.conf, and each volume (Secret, ConfigMap,
//     projected service-account token with the plane's ca.crt, downward API,
//     emptyDir) at its mountPath. Secret and ConfigMap volumes are refreshed
//     while the pod runs, as the kubelet does;
//   - the process as the kubelet starts it: command/args over the image's
//     Entrypoint/Cmd, the image's env then the container's (fieldRef,
//     secretKeyRef and configMapKeyRef resolved), the working directory, and
//     the user (runAsUser/runAsGroup, else the image's User); runAsNonRoot
//     refuses a root user with CreateContainerConfigError and the kubelet's
//     message in the Pod's Ready condition.
//
// The pod is Ready once its readiness probes pass (HTTP or TCP, dialled inside
// the pod's network namespace). A container that exits, or fails its liveness
// probe failureThreshold times, is restarted with backoff, and the Pod's
// restart count shows it. Deployment status (replicas,
// ready, available, the Available condition) follows. A changed pod template
// replaces the pods. Each container's output goes to a log file.
//
// The runner touches nothing outside 127.0.0.0/8, its work directory and the
// namespaces it creates.
package pods
