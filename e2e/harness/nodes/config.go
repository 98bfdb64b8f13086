package nodes

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Addresses of node index i.
func hostLinkIP(i int) string { return fmt.Sprintf("10.198.%d.1", i) }
func nodeIP(i int) string     { return fmt.Sprintf("10.198.%d.2", i) }
func podCIDR(i int) string    { return fmt.Sprintf("10.200.%d.0/24", i) }

// paths of a node's files under its directory.
type paths string

func (p paths) containerdConfig() string { return filepath.Join(string(p), "containerd.toml") }
func (p paths) containerdRoot() string   { return filepath.Join(string(p), "containerd") }
func (p paths) containerdSocket() string { return filepath.Join(string(p), "containerd.sock") }
func (p paths) mirrors() string          { return filepath.Join(string(p), "certs.d") }
func (p paths) cni() string              { return filepath.Join(string(p), "net.d") }
func (p paths) kubeletConfig() string    { return filepath.Join(string(p), "kubelet.yaml") }
func (p paths) proxyConfig() string      { return filepath.Join(string(p), "kube-proxy.yaml") }
func (p paths) resolvConf() string       { return filepath.Join(string(p), "resolv.conf") }
func (p paths) podLogs() string          { return filepath.Join(string(p), "pods") }
func (p paths) log(what string) string   { return filepath.Join(string(p), what+".log") }

// writeConfigs writes the node's containerd, CNI, kubelet and kube-proxy
// configurations.
func (n *Node) writeConfigs() error {
	p := n.paths
	for _, d := range []string{p.containerdRoot(), p.mirrors(), p.cni(), p.podLogs()} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	files := map[string]string{
		p.containerdConfig(): n.containerdConfig(),
		p.kubeletConfig():    n.kubeletConfig(),
		p.proxyConfig():      n.proxyConfig(),
		p.resolvConf():       "nameserver " + HostAddress + "\n",
	}
	cni, err := n.cniConfig()
	if err != nil {
		return err
	}
	files[filepath.Join(p.cni(), "10-hostfleet.conflist")] = cni
	for _, host := range n.Mirrors {
		dir := filepath.Join(p.mirrors(), host)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		files[filepath.Join(dir, "hosts.toml")] = mirrorConfig(host, n.Registry)
	}
	for path, content := range files {
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// containerdConfig: CRI with runc under cgroupfs, overlayfs, the CNI
// configuration and mirrors of the node, and OOM score adjustments kept
// within what this machine allows (no CAP_SYS_RESOURCE).
func (n *Node) containerdConfig() string {
	p := n.paths
	return fmt.Sprintf(`version = 2
root = %q
state = "/run/containerd"
disabled_plugins = ["io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.aufs", "io.containerd.tracing.processor.v1.otlp", "io.containerd.internal.v1.tracing"]

[grpc]
  address = %q

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = %q
  restrict_oom_score_adj = true
  disable_apparmor = true
  stream_server_address = "127.0.0.1"
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = %q
  [plugins."io.containerd.grpc.v1.cri".registry]
    config_path = %q
`, p.containerdRoot(), p.containerdSocket(), n.PauseImage, p.cni(), p.mirrors())
}

// mirrorConfig sends the pulls of one upstream registry to the in-process
// registry, which serves <host>/<repository> (a pull-through mirror's
// layout), over plain HTTP.
func mirrorConfig(upstream, registry string) string {
	return fmt.Sprintf(`server = "https://%s"

[host."http://%s/v2/%s"]
  capabilities = ["pull", "resolve"]
  override_path = true
`, upstream, registry, upstream)
}

// cniConfig: a bridge (cni0) holding the node's pod range, the pods' gateway.
func (n *Node) cniConfig() (string, error) {
	conf := map[string]any{
		"cniVersion": "0.4.0",
		"name":       "hostfleet",
		"plugins": []any{
			map[string]any{
				"type": "bridge", "bridge": "cni0", "isGateway": true, "ipMasq": false, "hairpinMode": true,
				"ipam": map[string]any{
					"type": "host-local", "ranges": [][]map[string]string{{{"subnet": podCIDR(n.Index)}}},
					"routes": []map[string]string{{"dst": "0.0.0.0/0"}}, "dataDir": "/var/lib/cni/networks",
				},
			},
			map[string]any{"type": "portmap", "capabilities": map[string]bool{"portMappings": true}},
		},
	}
	b, err := json.MarshalIndent(conf, "", "  ")
	return string(b), err
}

// kubeletConfig: cgroupfs under the node's own cgroup root on cgroup v1,
// x509 clients of the plane's CA only, no evictions (the tests share one
// machine's disk and memory), secrets and ConfigMaps refreshed within
// seconds.
func (n *Node) kubeletConfig() string {
	return fmt.Sprintf(`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
failCgroupV1: false
failSwapOn: false
cgroupDriver: cgroupfs
cgroupRoot: %s
cgroupsPerQOS: true
containerRuntimeEndpoint: unix://%s
podLogsDir: %s
resolvConf: %s
address: %s
port: 10250
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: 10248
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: false}
  x509: {clientCAFile: %s}
authorization:
  mode: AlwaysAllow
evictionHard:
  memory.available: "0%%"
  nodefs.available: "0%%"
  nodefs.inodesFree: "0%%"
  imagefs.available: "0%%"
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
syncFrequency: 10s
serializeImagePulls: false
maxPods: 60
providerID: %q
`, n.cgroupRoot(), n.paths.containerdSocket(), n.paths.podLogs(), n.paths.resolvConf(), nodeIP(n.Index), n.ClientCAFile, n.ProviderID)
}

// proxyConfig: iptables, conntrack left as the kernel has it.
func (n *Node) proxyConfig() string {
	return fmt.Sprintf(`apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clientConnection:
  kubeconfig: %s
mode: iptables
hostnameOverride: %s
clusterCIDR: %s
bindAddress: %s
healthzBindAddress: ""
metricsBindAddress: 127.0.0.1:10249
conntrack:
  maxPerCore: 0
  min: 0
  tcpEstablishedTimeout: 0s
  tcpCloseWaitTimeout: 0s
`, n.ProxyKubeconfig, n.Name, podCIDR(n.Index), nodeIP(n.Index))
}

// cgroupRoot is the node's cgroup root in every hierarchy.
func (n *Node) cgroupRoot() string { return "/hostfleet-" + n.Name }

// netnsPrefix names the nodes' network namespaces.
const netnsPrefix = "hf-"

func (n *Node) netns() string { return netnsPrefix + n.Name }

// hostLink is the host end of the node's veth pair (15 characters at most).
func (n *Node) hostLink() string { return fmt.Sprintf("hfnode%d", n.Index) }

// labels is the kubelet's --node-labels value.
func labels(l map[string]string) string {
	var out []string
	for k, v := range l {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return strings.Join(out, ",")
}
