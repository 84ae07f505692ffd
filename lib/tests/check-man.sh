#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
#
# check-man.sh DIR: every man page renders without a groff or man warning.
set -e
cd "$1"
rc=0
for f in *.3; do
	if head -1 "$f" | grep -q '^\.so '; then
		target=$(sed -n 's/^\.so man3\///p' "$f")
		[ -f "$target" ] || { echo "check-man: $f: .so to missing $target"; rc=1; }
		continue
	fi
	out=$(LC_ALL=C.UTF-8 MANROFFSEQ='' MANWIDTH=80 groff -man -Tutf8 -ww -z "$f" 2>&1) || rc=1
	if [ -n "$out" ]; then
		echo "check-man: $f:"; echo "$out"; rc=1
	fi
	if command -v man >/dev/null 2>&1; then
		out=$(LC_ALL=C.UTF-8 MANWIDTH=80 man --warnings -E UTF-8 -l "$f" 2>&1 >/dev/null) || rc=1
		if [ -n "$out" ]; then
			echo "check-man: man -l $f:"; echo "$out"; rc=1
		fi
	fi
done
[ $rc = 0 ] && echo "ok check-man: $(find . -maxdepth 1 -name '*.3' | wc -l) pages"
exit $rc
