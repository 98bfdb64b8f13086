#!/usr/bin/env bash
# verify.sh fails when a build output is tracked (check-tree.sh), when the
# hub, agent and operator import each other (check-imports.sh), when the
# README's layout table misses a package (check-layout.sh), when a function
# is longer than its part allows (hack/funclen: 80 lines in the hub, agent,
# operator and internal, 120 in e2e) or a Go file longer than 450 lines (600
# in e2e; generated code aside), and when
# generated files (deepcopy code, CRDs, vendored CRDs, the Helm chart's
# templates, docs/troubleshooting.md) or go.mod/go.sum differ
# from what the generators make, and when the install bundles do not render.
# It never changes the working tree: it
# snapshots the generated paths, regenerates, compares, and puts the snapshot
# back.
set -euo pipefail
cd "$(dirname "$0")/.."

# The fast checks first: nothing compiled tracked, the parts' imports, the
# README's layout table, function and file lengths.
hack/check-tree.sh
hack/check-imports.sh
hack/check-layout.sh
go run ./hack/funclen hub=80 agent=80 operator=80 internal=80 e2e=120 e2e/programs=80 \
	file:hub=450 file:agent=450 file:operator=450 file:internal=450 file:hack=450 file:e2e=600

paths=(go.mod go.sum hub/api operator/api manifests deploy docs/troubleshooting.md)
snap=$(mktemp -d)
restore() {
	for p in "${paths[@]}"; do rm -rf "${p}"; done
	cp -a "${snap}/." .
	rm -rf "${snap}"
}
cp -a --parents "${paths[@]}" "${snap}/"
trap restore EXIT

make -s generate manifests >/dev/null
go mod tidy

stale=0
for p in "${paths[@]}"; do
	if ! diff -ruN "${snap}/${p}" "${p}" >"${snap}.diff" 2>&1; then
		echo "stale: ${p}"
		head -40 "${snap}.diff" | sed 's/^/    /'
		stale=1
	fi
done
rm -f "${snap}.diff"
if [[ ${stale} -ne 0 ]]; then
	echo "generated files differ from what the generators make: run 'make generate manifests' and 'go mod tidy' (hand edits to generated files are lost), and commit"
	exit 1
fi
echo "verify: generated files are up to date"

# The install bundles render with the pinned tools (deploy/bundles_test.go,
# in make test, compares what they render).
hack/tools.sh kustomize helm 2>/dev/null
"$(hack/tools.sh --print-bin kustomize)" build deploy/operator >/dev/null
"$(hack/tools.sh --print-bin kustomize)" build deploy/flowcontrol >/dev/null
"$(hack/tools.sh --print-bin helm)" template hostfleet-operator deploy/helm/hostfleet-operator --kube-version 1.37.2 --include-crds >/dev/null
"$(hack/tools.sh --print-bin helm)" lint deploy/helm/hostfleet-operator --kube-version 1.37.2 --quiet >/dev/null
echo "verify: the install bundles render (kustomize build deploy/operator and deploy/flowcontrol, helm template and lint)"
