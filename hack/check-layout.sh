#!/usr/bin/env bash
# check-layout.sh fails when the README's layout table and the tree disagree:
# every Go package must be named in the table (as `path`), and every path the
# table names must exist.
set -euo pipefail
cd "$(dirname "$0")/.."

mod=$(go list -m)
# The table: the lines of README.md's "## Layout" section that start with "|".
table=$(awk '/^## Layout/{on=1; next} /^## /{on=0} on && /^\|/' README.md)
if [[ -z ${table} ]]; then
	echo "README.md has no '## Layout' table"
	exit 1
fi
# The paths a row names: backquoted, in its first column.
# shellcheck disable=SC2016 # the backquotes are literal
named=$(cut -d'|' -f2 <<<"${table}" | grep -o '`[a-z0-9_./-]*`' | tr -d '`' | sed 's#/$##' | sort -u)
bad=0
while IFS= read -r pkg; do
	rel=${pkg#"${mod}"}
	rel=${rel#/}
	[[ -n ${rel} ]] || continue
	if ! grep -qxF "${rel}" <<<"${named}"; then
		echo "README.md layout table does not name the package ${rel}"
		bad=1
	fi
done < <(go list ./...)
while IFS= read -r path; do
	if [[ ! -e ${path} ]]; then
		echo "README.md layout table names ${path}, which does not exist"
		bad=1
	fi
done <<<"${named}"
if ((bad)); then
	echo "update the '## Layout' table in README.md: one row per package, each named as \`path\`"
	exit 1
fi
echo "check-layout: the README's layout table names every package"
