#!/usr/bin/env bash
# verify.sh fails when a build output is tracked (check-tree.sh), when the
# hub, agent and operator import each other (check-imports.sh), when the
# README's layout table misses a package (check-layout.sh), and when
# generated files (deepcopy code, CRDs, vendored CRDs) or go.mod/go.sum differ
# from what the generators make. It never changes the working tree: it
# snapshots the generated paths, regenerates, compares, and puts the snapshot
# back.
set -euo pipefail
cd "$(dirname "$0")/.."

# The fast checks first: nothing compiled tracked, the parts' imports, the
# README's layout table.
hack/check-tree.sh
hack/check-imports.sh
hack/check-layout.sh

paths=(go.mod go.sum hub/api operator/api manifests deploy)
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
