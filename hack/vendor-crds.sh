#!/usr/bin/env bash
# vendor-crds.sh copies the upstream CRDs Hostfleet installs and tests against
# into manifests/crds/, from the exact module versions the project pins:
#
#   metal3: github.com/metal3-io/baremetal-operator config/base/crds/bases, from
#           the release that matches the pinned apis module
#   ocm:    open-cluster-management.io/api, the version in go.mod
#
# The files are copied byte for byte, with a header naming their source, and
# checked in; `make verify` fails when they differ from what this script makes.
# One exception: the HostClaim CRD gets printer columns (cluster, host,
# power, Ready and its reason; hack/hostclaim-columns.yaml) and nothing else,
# which this script checks (docs/decisions.md).
set -euo pipefail
cd "$(dirname "$0")/.."

BMO_VERSION=$(go list -m -f '{{.Version}}' github.com/metal3-io/baremetal-operator/apis)
OCM_API_DIR=$(go list -m -f '{{.Dir}}' open-cluster-management.io/api)
OCM_API_VERSION=$(go list -m -f '{{.Version}}' open-cluster-management.io/api)
BMO_DIR=$(go mod download -json "github.com/metal3-io/baremetal-operator@${BMO_VERSION}" | sed -n 's/.*"Dir": "\(.*\)".*/\1/p')

copy() { # copy <src> <dst> <origin>
	{
		echo "# Vendored from $3 by hack/vendor-crds.sh; do not edit."
		cat "$1"
	} >"$2"
}

rm -rf manifests/crds/metal3 manifests/crds/ocm
mkdir -p manifests/crds/metal3 manifests/crds/ocm

for f in "${BMO_DIR}"/config/base/crds/bases/*.yaml; do
	copy "$f" "manifests/crds/metal3/$(basename "$f")" "github.com/metal3-io/baremetal-operator@${BMO_VERSION}"
done

# HostClaim: upstream's schema with printer columns, in place of its one
# version's `- name: v1alpha1` line.
claims=manifests/crds/metal3/metal3.io_hostclaims.yaml
[[ $(grep -c '^  - name: v1alpha1$' "${claims}") -eq 1 ]] || { echo "vendor-crds: upstream's HostClaim CRD no longer has one v1alpha1 version: review hack/hostclaim-columns.yaml" >&2; exit 1; }
sed -i -e '/^  - name: v1alpha1$/{r hack/hostclaim-columns.yaml' -e 'd}' "${claims}"
sed -i '1s/do not edit\./printer columns added (hack\/hostclaim-columns.yaml); do not edit./' "${claims}"
# Columns only: without them, the file is upstream's.
n=$(wc -l <hack/hostclaim-columns.yaml)
start=$(grep -n '^  - additionalPrinterColumns:$' "${claims}" | cut -d: -f1)
if ! diff <(sed "${start},$((start + n - 1))d" "${claims}" | tail -n +2) <(sed '/^  - name: v1alpha1$/d' "${BMO_DIR}/config/base/crds/bases/$(basename "${claims}")") >/dev/null; then
	echo "vendor-crds: the HostClaim CRD differs from upstream's by more than its printer columns" >&2
	exit 1
fi

for f in \
	cluster/v1/0000_00_clusters.open-cluster-management.io_managedclusters.crd.yaml \
	cluster/v1beta2/0000_00_clusters.open-cluster-management.io_managedclustersets.crd.yaml \
	cluster/v1beta2/0000_01_clusters.open-cluster-management.io_managedclustersetbindings.crd.yaml \
	cluster/v1beta1/0000_02_clusters.open-cluster-management.io_placements.crd.yaml \
	cluster/v1beta1/0000_03_clusters.open-cluster-management.io_placementdecisions.crd.yaml \
	work/v1/0000_00_work.open-cluster-management.io_manifestworks.crd.yaml \
	work/v1/0000_01_work.open-cluster-management.io_appliedmanifestworks.crd.yaml \
	addon/v1beta1/0000_00_addon.open-cluster-management.io_clustermanagementaddons.crd.yaml \
	addon/v1beta1/0000_01_addon.open-cluster-management.io_managedclusteraddons.crd.yaml \
	addon/v1beta1/0000_02_addon.open-cluster-management.io_addondeploymentconfigs.crd.yaml \
	addon/v1alpha1/0000_03_addon.open-cluster-management.io_addontemplates.crd.yaml; do
	copy "${OCM_API_DIR}/${f}" "manifests/crds/ocm/$(basename "${f}" .crd.yaml | sed 's/^0000_0[0-9]_//').yaml" "open-cluster-management.io/api@${OCM_API_VERSION}"
done
echo "[vendor-crds] metal3 ${BMO_VERSION}: $(find manifests/crds/metal3 -name '*.yaml' | wc -l) CRDs; ocm ${OCM_API_VERSION}: $(find manifests/crds/ocm -name '*.yaml' | wc -l) CRDs"
