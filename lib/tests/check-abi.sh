#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
#
# check-abi.sh SHLIB MAP HEADER...: the shared library exports exactly the
# functions the version script lists, the headers declare exactly those
# (besides static inline helpers), and every one, helpers included, has a
# man page (man/<name>.3).
set -e
so=$1 map=$2
shift 2
dir=$(cd "$(dirname "$0")/.." && pwd)
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT

nm -D --defined-only "$so" | awk '$2 == "T" { sub(/@.*/, "", $3); print $3 }' |
	sort -u > "$t/exported"
sed -n 's/^[[:space:]]*\(refcnt_[a-z_]*\);$/\1/p' "$map" | sort -u > "$t/map"
cat "$@" | tr '\n' ' ' | tr ';' '\n' > "$t/statements"
grep -v 'static inline' "$t/statements" |
	sed -n 's/^.*[^a-z_]\(refcnt_[a-z_0-9]*\)(.*$/\1/p' | sort -u > "$t/declared"
sed -n 's/^.*static inline[^(]*[^a-z_]\(refcnt_[a-z_0-9]*\)(.*$/\1/p' \
	"$t/statements" | sort -u > "$t/inline"

rc=0
if ! cmp -s "$t/exported" "$t/map"; then
	echo "check-abi: exported symbols differ from $map:"; diff "$t/map" "$t/exported" || true
	rc=1
fi
if ! cmp -s "$t/declared" "$t/map"; then
	echo "check-abi: declared functions differ from $map:"; diff "$t/map" "$t/declared" || true
	rc=1
fi
while read -r f; do
	[ -f "$dir/man/$f.3" ] || { echo "check-abi: no man page man/$f.3"; rc=1; }
done <<EOF
$(cat "$t/map" "$t/inline")
EOF
[ $rc = 0 ] && echo "ok check-abi: $(wc -l < "$t/map") functions exported, declared and documented, $(wc -l < "$t/inline") inline documented"
exit $rc
