// Package pods runs the Deployments of a local control plane as processes, so
// that real OCM components and the Hostfleet agent run on the test planes as
// they would on a cluster, without a container engine. It is test
// infrastructure for the local end-to-end tests; it needs Linux and root.
//
// A Runner watches the Deployments of one plane. For each replica whose
// containers all use an image it maps to a local binary, it creates a Pod
// object (owned by the Deployment, so garbage collection and namespace
// deletion work), then starts the pod:
//
//   - a network namespace of its own (unshare), with loopback up, so container
//     ports never collide across pods. Inside it, every port in
//     Options.ForwardPorts (the planes' API servers) is forwarded to the same
//     port on the host's loopback, so the in-cluster configuration
//     (KUBERNETES_SERVICE_HOST=127.0.0.1) and kubeconfigs naming
//     https://127.0.0.1:<port> work unchanged;
//   - a pod IP of its own on the host's loopback (127.1.x.y); each container
//     port is forwarded from pod IP and port into the pod. Services that select
//     the pod get an EndpointSlice with that address, which the API server
//     follows for webhooks (--enable-aggregator-routing);
//   - per container, a mount namespace and a root of its own: the host's /usr,
//     /etc and /dev, a private /tmp, the binary at the image's path, and each
//     volume (Secret, ConfigMap, projected service-account token with the
//     plane's ca.crt, downward API, emptyDir) at its mountPath. Secret and
//     ConfigMap volumes are refreshed while the pod runs, as the kubelet does;
//   - env values, fieldRef, secretKeyRef and configMapKeyRef resolved.
//
// The pod is Ready once its readiness probes pass (HTTP or TCP, dialled inside
// the pod's network namespace). A container that exits is restarted with
// backoff, and the Pod's restart count shows it. Deployment status (replicas,
// ready, available, the Available condition) follows. A changed pod template
// replaces the pods. Each container's output goes to a log file.
//
// The runner touches nothing outside 127.0.0.0/8, its work directory and the
// namespaces it creates.
package pods
