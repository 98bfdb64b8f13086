#!/usr/bin/env bash
# check-tree.sh fails when git tracks a build output: a file over 1 MiB or an
# executable binary (ELF, Mach-O or PE). Build outputs belong in bin/, which
# is ignored.
#
# usage: hack/check-tree.sh [repository directory, default: this repository]
set -euo pipefail
cd "${1:-$(dirname "$0")/..}"

# One perl process reads every tracked file's size and first bytes.
bad=$(git ls-files -z | perl -0 -ne '
	chomp;
	next if -l $_ || ! -f $_;
	my $size = -s $_;
	if ($size > 1024 * 1024) { print "tracked file over 1 MiB: $_ ($size bytes)\n"; next }
	open(my $fh, "<:raw", $_) or next;
	read($fh, my $head, 4096);
	close $fh;
	my $m = substr($head, 0, 4);
	if ($m eq "\x7fELF" || $m =~ /^(\xcf\xfa\xed\xfe|\xce\xfa\xed\xfe|\xfe\xed\xfa\xcf|\xfe\xed\xfa\xce)$/
		|| (substr($m, 0, 2) eq "MZ" && $head =~ /PE\x00\x00/)) {
		print "tracked executable binary: $_\n";
	}
')
if [[ -n ${bad} ]]; then
	echo "${bad}"
	echo "remove build outputs from git (git rm --cached <file>) and build into bin/"
	exit 1
fi
echo "check-tree: no build output tracked"
