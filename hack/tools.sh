#!/usr/bin/env bash
# tools.sh builds, from the Go module proxy only, the binaries the tests and the
# demo need, into a cache outside the repository:
#
#   $HOSTFLEET_CACHE/<tool>-<version>/bin/<binary>
#
# The control planes' binaries (kube-apiserver, kube-controller-manager), OCM's
# components and clusteradm are built from the modules under e2e/tools, whose
# go.mod and go.sum pin every dependency (one module per Kubernetes version
# in play). etcd and baremetal-operator are built in throw-away wrapper
# modules; controller-gen, staticcheck, kustomize and helm with go install. A tool whose binary is already in the cache is
# skipped, so a second run takes seconds.
#
# The IPMI emulator (ipmi_sim), ipmitool, shellcheck and Prometheus (with
# promtool) are Debian packages: "ipmi", "shellcheck" and "prometheus" install
# them with apt-get when they are missing (as root, or with sudo); so are the
# nodes' container runtime, networking and kernel tools: "node" installs
# containerd, runc, the CNI plugins, iptables, iproute2 and conntrack beside
# building kubelet, kube-proxy and kube-scheduler.
#
# usage: hack/tools.sh [kube-apiserver|etcd|kube-controller-manager|kubectl|node|baremetal-operator|upstreambind|controller-gen|staticcheck|kustomize|helm|shellcheck|ipmi|prometheus|ocm|clusteradm|all]...
#        hack/tools.sh --print-assets   # the KUBEBUILDER_ASSETS directory
set -euo pipefail

CACHE="${HOSTFLEET_CACHE:-${HOME}/.cache/hostfleet}"
# KUBE_VERSION is the control planes' (kube-apiserver, kube-controller-manager):
# the newest release by default; make test-versions sets the oldest the docs
# claim. Each version in play has its module, e2e/tools/kubernetes/v<minor>.
KUBE_VERSION="${KUBE_VERSION:-v1.37.2}"
# shellcheck disable=SC2034 # read by --print-bin through eval
KUBECTL_VERSION="v1.37.2"
# The nodes stay on 1.35: Debian's containerd 1.6 lacks the CRI RuntimeConfig
# call that later kubelets need (docs/decisions.md); 1.35 is within the
# kubelet's skew of three minor releases behind the API server.
NODE_VERSION="v1.35.4"
ETCD_VERSION="${ETCD_VERSION:-v3.6.16}"
BMO_VERSION="${BMO_VERSION:-v0.13.2}"
BMO_HWUTILS_VERSION="v0.5.1"
IRSO_API_VERSION="v0.8.0"
CONTROLLER_GEN_VERSION="${CONTROLLER_GEN_VERSION:-v0.20.1}"
STATICCHECK_VERSION="${STATICCHECK_VERSION:-v0.8.2}"
KUSTOMIZE_VERSION="${KUSTOMIZE_VERSION:-v5.7.1}"
HELM_VERSION="${HELM_VERSION:-v3.19.0}"
# OCM_VERSION picks the OCM components (e2e/tools/ocm/<version>), the OCM
# module clusteradm is built with (e2e/tools/clusteradm/ocm-<version>: its
# cluster-manager and klusterlet charts), the images and --bundle-version.
# v1.2.1 and v1.2.0 build here; the module proxy serves v1.3.x as go.mod only.
OCM_VERSION="${OCM_VERSION:-v1.2.1}"
CLUSTERADM_VERSION="v1.3.1"                     # e2e/tools/clusteradm/ocm-*/go.mod
# The cache key names the OCM module clusteradm is built with.
CLUSTERADM_KEY="${CLUSTERADM_VERSION}-ocm-${OCM_VERSION}"
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
# upstreambind (e2e/tools/upstreambind: baremetal-operator's HostClaim
# controller, for the forwarding tests and make bench) is the project's own
# code: its cache key is a hash of its files.
# shellcheck disable=SC2034 # read by --print-bin through eval
UPSTREAMBIND_VERSION=$(cat "${ROOT}"/e2e/tools/upstreambind/{go.mod,go.sum,*.go} | sha256sum | cut -c1-12)

log() { printf '[tools] %s\n' "$*" >&2; }

# assets is the envtest binary directory (kube-apiserver and etcd side by side).
assets() { echo "${CACHE}/envtest-${KUBE_VERSION}-etcd-${ETCD_VERSION}"; }

# wrapper <dir> <module> writes a fresh wrapper module in dir.
wrapper() {
	local dir=$1 mod=$2
	rm -rf "${dir}"
	mkdir -p "${dir}"
	printf 'module %s\n\ngo 1.25\n' "${mod}" >"${dir}/go.mod"
}

# kube_module <version>: the e2e/tools module that builds a Kubernetes
# version; its replace block maps every staging module k8s.io/kubernetes
# replaces locally to its published version.
kube_module() {
	local minor=${1#v*.}
	local mod="e2e/tools/kubernetes/${1%%.*}.${minor%%.*}"
	if ! grep -qF "k8s.io/kubernetes ${1}" "${ROOT}/${mod}/go.mod" 2>/dev/null; then
		log "Kubernetes ${1}: no ${mod} pinning it; versions here: $(cd "${ROOT}/e2e/tools/kubernetes" && echo v*)"
		return 1
	fi
	echo "${mod}"
}

# build_kube <name> <version> <package>...: Kubernetes binaries with their
# version stamped, as a release's: clients such as Helm check it. One built
# before that (it says v0.0.0-master) is built again (kubectl says its
# version with `version --client`).
build_kube() {
	local name=$1 version=$2 mod
	shift 2
	mod=$(kube_module "${version}") || exit 1
	local bin="${CACHE}/${name}-${version}/bin/${1##*/}"
	if [[ -x ${bin} ]] && ! { "${bin}" --version 2>/dev/null || "${bin}" version --client 2>/dev/null; } | grep -qF "${version}"; then rm -f "${bin}"; fi
	KUBE_LDFLAGS=$(kube_ldflags "${version}") build_tools_module "${name}" "${version}" "${mod}" "$@"
}

# kube_ldflags <version> stamp a version into a Kubernetes binary.
kube_ldflags() {
	local minor=${1#v*.}
	echo "-X k8s.io/component-base/version.gitVersion=${1} -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=${minor%%.*} -X k8s.io/component-base/version.gitTreeState=clean"
}

build_kube_apiserver() { build_kube kube-apiserver "${KUBE_VERSION}" k8s.io/kubernetes/cmd/kube-apiserver; }

# build_kube_controller_manager: the planes run it for garbage collection,
# namespace deletion, service-account tokens and CSR signing.
build_kube_controller_manager() { build_kube kube-controller-manager "${KUBE_VERSION}" k8s.io/kubernetes/cmd/kube-controller-manager; }

# build_node: kubelet, kube-proxy and kube-scheduler, for the real nodes of
# the end-to-end planes (e2e/harness/nodes); CGO off, as the others.
build_node() {
	build_kube node "${NODE_VERSION}" k8s.io/kubernetes/cmd/kubelet k8s.io/kubernetes/cmd/kube-proxy k8s.io/kubernetes/cmd/kube-scheduler
}

# build_kubectl: the tests run `kubectl hostfleet` through the real kubectl.
build_kubectl() { build_kube kubectl "${KUBECTL_VERSION}" k8s.io/kubernetes/cmd/kubectl; }

# build_etcd builds etcd, and etcdctl and etcdutl beside it: the restore
# tests save a plane's etcd and restore it as an operator does.
build_etcd() {
	local bin="${CACHE}/etcd-${ETCD_VERSION}/bin"
	if [[ -x ${bin}/etcd && -x ${bin}/etcdctl && -x ${bin}/etcdutl ]]; then log "etcd ${ETCD_VERSION}: cached in ${bin}"; return; fi
	local src="${CACHE}/src/etcd-${ETCD_VERSION}"
	log "etcd ${ETCD_VERSION}: building etcd, etcdctl and etcdutl in ${src} (about a minute)"
	wrapper "${src}" hostfleet.tools/etcd
	(
		cd "${src}"
		cat >>go.mod <<MOD
require (
	go.etcd.io/etcd/server/v3 ${ETCD_VERSION}
	go.etcd.io/etcd/etcdctl/v3 ${ETCD_VERSION}
	go.etcd.io/etcd/etcdutl/v3 ${ETCD_VERSION}
	go.etcd.io/etcd/api/v3 ${ETCD_VERSION}
	go.etcd.io/etcd/client/pkg/v3 ${ETCD_VERSION}
	go.etcd.io/etcd/client/v3 ${ETCD_VERSION}
	go.etcd.io/etcd/pkg/v3 ${ETCD_VERSION}
)
MOD
		go get "go.etcd.io/etcd/server/v3@${ETCD_VERSION}" "go.etcd.io/etcd/etcdctl/v3@${ETCD_VERSION}" "go.etcd.io/etcd/etcdutl/v3@${ETCD_VERSION}"
		CGO_ENABLED=0 go build -trimpath -ldflags '-s -w' -o "${bin}/etcd" go.etcd.io/etcd/server/v3
		CGO_ENABLED=0 go build -trimpath -ldflags '-s -w' -o "${bin}/etcdctl" go.etcd.io/etcd/etcdctl/v3
		CGO_ENABLED=0 go build -trimpath -ldflags '-s -w' -o "${bin}/etcdutl" go.etcd.io/etcd/etcdutl/v3
	)
	log "etcd ${ETCD_VERSION}: built etcd, etcdctl and etcdutl in ${bin}"
}

build_bmo() {
	local out="${CACHE}/baremetal-operator-${BMO_VERSION}/bin/baremetal-operator"
	if [[ -x ${out} ]]; then log "baremetal-operator ${BMO_VERSION}: cached at ${out}"; return; fi
	local src="${CACHE}/src/baremetal-operator-${BMO_VERSION}"
	log "baremetal-operator ${BMO_VERSION}: building in ${src} (about 2 minutes)"
	wrapper "${src}" hostfleet.tools/baremetal-operator
	(
		cd "${src}"
		cat >>go.mod <<MOD
require (
	github.com/metal3-io/baremetal-operator ${BMO_VERSION}
	github.com/metal3-io/baremetal-operator/apis ${BMO_VERSION}
	github.com/metal3-io/baremetal-operator/pkg/hardwareutils ${BMO_HWUTILS_VERSION}
)

replace github.com/metal3-io/ironic-standalone-operator/api => github.com/metal3-io/ironic-standalone-operator/api ${IRSO_API_VERSION}
MOD
		GONOSUMDB="github.com/metal3-io/ironic-standalone-operator" go get "github.com/metal3-io/baremetal-operator@${BMO_VERSION}"
		GONOSUMDB="github.com/metal3-io/ironic-standalone-operator" CGO_ENABLED=0 go build -trimpath -ldflags '-s -w' -o "${out}" github.com/metal3-io/baremetal-operator
	)
	log "baremetal-operator ${BMO_VERSION}: built ${out}"
}

# go_install <name> <package> <version>: a plain `go install` into the cache.
go_install() {
	local name=$1 pkg=$2 version=$3
	local dir="${CACHE}/${name}-${version}/bin"
	if [[ -x ${dir}/${name} ]]; then log "${name} ${version}: cached at ${dir}/${name}"; return; fi
	log "${name} ${version}: go install ${pkg}@${version}"
	GOBIN="${dir}" go install "${pkg}@${version}"
	log "${name} ${version}: built ${dir}/${name}"
}


# build_tools_module <name> <version> <dir> <package>...: builds the tool
# directives of one of the e2e/tools modules (pinned go.mod and go.sum in the
# repository) into $CACHE/<name>-<version>/bin.
build_tools_module() {
	local name=$1 version=$2 mod=$3
	shift 3
	local dir="${CACHE}/${name}-${version}/bin" missing=0 pkg
	for pkg in "$@"; do [[ -x ${dir}/${pkg##*/} ]] || missing=1; done
	if [[ ${missing} -eq 0 ]]; then log "${name} ${version}: cached in ${dir}"; return; fi
	log "${name} ${version}: building ${*##*/} from ${mod} (a few minutes on 2 cores)"
	mkdir -p "${dir}"
	(
		cd "${ROOT}/${mod}"
		# about-api is a pseudo-version the checksum database does not know.
		GONOSUMDB="${GONOSUMDB:-sigs.k8s.io/about-api}" GOFLAGS=-mod=readonly CGO_ENABLED=0 go build -trimpath -ldflags "-s -w ${KUBE_LDFLAGS:-}" -o "${dir}/" "$@"
	)
	log "${name} ${version}: built into ${dir}"
}

# ocm_module <tool> <dir>: the e2e/tools module of an OCM version, or an
# error naming the versions that exist.
ocm_module() {
	local mod="e2e/tools/$1/$2"
	if [[ ! -f ${ROOT}/${mod}/go.mod ]]; then
		log "OCM_VERSION=${OCM_VERSION}: no ${mod}; versions here: $(cd "${ROOT}/e2e/tools/ocm" && echo v*)"
		return 1
	fi
	echo "${mod}"
}

# apt_install <command>... -- <package>...: installs the Debian packages when
# any of the commands is missing.
apt_install() {
	local cmds=() missing=0 c
	while [[ $1 != -- ]]; do cmds+=("$1"); shift; done
	shift
	for c in "${cmds[@]}"; do command -v "${c}" >/dev/null || missing=1; done
	if ((!missing)); then
		log "${cmds[*]}: installed"
		return
	fi
	local sudo=""
	[[ $(id -u) -eq 0 ]] || sudo="sudo"
	log "${cmds[*]}: apt-get install $*"
	${sudo} apt-get update -qq
	DEBIAN_FRONTEND=noninteractive ${sudo} apt-get install -y -qq --no-install-recommends "$@" >/dev/null
	log "${cmds[*]}: installed"
}

# link_assets puts kube-apiserver and etcd (with etcdctl and etcdutl) in one
# directory for KUBEBUILDER_ASSETS.
link_assets() {
	local dir
	dir=$(assets)
	mkdir -p "${dir}"
	ln -sf "${CACHE}/kube-apiserver-${KUBE_VERSION}/bin/kube-apiserver" "${dir}/kube-apiserver"
	local e
	for e in etcd etcdctl etcdutl; do
		if [[ -x ${CACHE}/etcd-${ETCD_VERSION}/bin/${e} ]]; then ln -sf "${CACHE}/etcd-${ETCD_VERSION}/bin/${e}" "${dir}/${e}"; fi
	done
	local kcm="${CACHE}/kube-controller-manager-${KUBE_VERSION}/bin/kube-controller-manager"
	if [[ -x ${kcm} ]]; then ln -sf "${kcm}" "${dir}/kube-controller-manager"; fi
}

case "${1:-all}" in
--print-assets) assets; exit 0 ;;
--print-bmo) echo "${CACHE}/baremetal-operator-${BMO_VERSION}/bin/baremetal-operator"; exit 0 ;;
--print-bin)
	case "$2" in
	clusteradm) echo "${CACHE}/clusteradm-${CLUSTERADM_KEY}/bin/clusteradm" ;;
	*) echo "${CACHE}/${2}-$(eval echo "\${$(echo "${2}" | tr 'a-z-' 'A-Z_')_VERSION}")/bin/${2}" ;;
	esac
	exit 0
	;;
--print-ocm-module) echo "${ROOT}/e2e/tools/clusteradm/ocm-${OCM_VERSION}"; exit 0 ;;
esac

tools=("$@")
[[ ${#tools[@]} -eq 0 || ${tools[0]} == all ]] && tools=(etcd kube-apiserver kube-controller-manager kubectl node baremetal-operator upstreambind controller-gen staticcheck kustomize helm shellcheck ipmi prometheus ocm clusteradm)
for t in "${tools[@]}"; do
	case "${t}" in
	kube-apiserver) build_kube_apiserver; [[ -x ${CACHE}/etcd-${ETCD_VERSION}/bin/etcd ]] && link_assets ;;
	etcd) build_etcd; [[ -x ${CACHE}/kube-apiserver-${KUBE_VERSION}/bin/kube-apiserver ]] && link_assets ;;
	envtest) build_etcd; build_kube_apiserver; link_assets ;;
	kube-controller-manager) build_kube_controller_manager; link_assets ;;
	kubectl) build_kubectl ;;
	node)
		build_node
		apt_install containerd runc ctr iptables ip conntrack nsenter unshare /usr/lib/cni/bridge -- \
			containerd runc containernetworking-plugins iptables iproute2 conntrack util-linux
		;;
	baremetal-operator) build_bmo ;;
	controller-gen) go_install controller-gen sigs.k8s.io/controller-tools/cmd/controller-gen "${CONTROLLER_GEN_VERSION}" ;;
	staticcheck) go_install staticcheck honnef.co/go/tools/cmd/staticcheck "${STATICCHECK_VERSION}" ;;
	kustomize) go_install kustomize sigs.k8s.io/kustomize/kustomize/v5 "${KUSTOMIZE_VERSION}" ;;
	helm) go_install helm helm.sh/helm/v3/cmd/helm "${HELM_VERSION}" ;;
	ocm)
		mod=$(ocm_module ocm "${OCM_VERSION}") || exit 1
		build_tools_module ocm "${OCM_VERSION}" "${mod}" open-cluster-management.io/ocm/cmd/{registration-operator,registration,work,placement,addon}
		;;
	clusteradm)
		mod=$(ocm_module clusteradm "ocm-${OCM_VERSION}") || exit 1
		build_tools_module clusteradm "${CLUSTERADM_KEY}" "${mod}" open-cluster-management.io/clusteradm/cmd/clusteradm
		;;
	upstreambind)
		GONOSUMDB="github.com/metal3-io/ironic-standalone-operator" build_tools_module upstreambind "${UPSTREAMBIND_VERSION}" e2e/tools/upstreambind github.com/hostfleet/hostfleet/e2e/tools/upstreambind
		;;
	ipmi) apt_install ipmi_sim ipmitool -- openipmi ipmitool ;;
	shellcheck) apt_install shellcheck -- shellcheck ;;
	prometheus) apt_install prometheus promtool -- prometheus ;;
	*) log "unknown tool ${t}"; exit 2 ;;
	esac
done
