#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# Run the refcnt selftest binaries that tests.list (written by the
# Makefile, next to this script) names, in its order, as root, with
# refcnt.ko loaded (default parameters). REFCNT_KO=<path to refcnt.ko>
# lets lifecycle_test unload and reload it; without it those tests skip.
# REFCNT_TEST_KO=<path to refcnt_test.ko>, the test rig's test module
# (tools/testing/kmod/), lets the tests that feed synthetic samples or
# time the entry point load it; without it those tests skip.
#
# Output: each binary's own TAP stream as it runs, framed by
#   # selftests: refcnt: <binary>
#   # selftests: refcnt: <binary>: exit <status> (<seconds> s)
# Counting is left to tools/testing/tap-summary (on the host: make check
# runs it on the guest's log). So that it sees every failure, a binary
# that is missing, or exits with a status other than 0 or 4 (skip) while
# giving every result it planned, none "not ok", gets one "not ok" line
# here; a binary that stops before its plan is counted by tap-summary.
# Exit status: 0 if every binary exited 0 or 4, 1 otherwise.
#
# Arguments, if any, name the binaries to run instead (in tests.list's
# order, those of tests.list only): make check runs a part of the list on
# the 72-node topology, make check-long all of it.

cd "$(dirname "$0")" || exit 1

if [ ! -r tests.list ]; then
	echo "not ok 1 run_tests.sh # no tests.list next to it"
	exit 1
fi
for a in "$@"; do
	if ! grep -qx "$a" tests.list; then
		echo "not ok 1 run_tests.sh # $a is not in tests.list"
		exit 1
	fi
done
# The binaries to run: tests.list, or those of it the arguments name.
selected() {
	if [ $# = 0 ]; then
		cat tests.list
		return
	fi
	while read -r t; do
		for a in "$@"; do
			[ "$a" != "$t" ] || echo "$t"
		done
	done <tests.list
}
if [ "$(id -u)" != 0 ]; then
	echo "# refcnt selftests: warning: not running as root"
fi

out=$(mktemp) || exit 1
rcf=$(mktemp) || exit 1
MARK="@@run_tests.sh-exit-$$"
trap 'rm -f "$out" "$rcf"' EXIT

# Did the binary whose output is in $out fail without saying so?
silent_failure() {
	plan=$(sed -n 's/^1\.\.\([0-9][0-9]*\).*/\1/p' "$out" | tail -n 1)
	results=$(grep -cE '^(not )?ok([ 	]|$)' "$out")
	! grep -q '^not ok' "$out" && [ "$results" -ge "${plan:-0}" ]
}

status=0
while read -r t; do
	case "$t" in '' | '#'*) continue ;; esac
	echo "# selftests: refcnt: $t"
	if [ ! -x "./$t" ]; then
		case "$t" in
		*32)
			echo "ok 1 $t # SKIP not built (no gcc -m32)"
			echo "# selftests: refcnt: $t: exit 4"
			;;
		*)
			echo "not ok 1 $t # missing"
			echo "# selftests: refcnt: $t: exit 127"
			status=1
			;;
		esac
		continue
	fi
	: >"$out"
	: >"$rcf"
	t0=$(cut -d' ' -f1 /proc/uptime)
	# The binary's output, shown and kept in $out, up to the marker line
	# that carries its exit status: a process it leaves behind, still
	# holding the pipe, cannot keep the reader (and so the run) waiting.
	{ "./$t" 2>&1; echo "$MARK $?"; } </dev/null | awk -v mark="$MARK" \
		-v out="$out" -v rcf="$rcf" '
	{
		i = index($0, mark " ")
		if (i) {
			if (i > 1) {	# output without a final newline
				print substr($0, 1, i - 1)
				print substr($0, 1, i - 1) > out
			}
			print substr($0, i + length(mark) + 1) > rcf
			exit
		}
		print; fflush(); print > out
	}'
	rc=$(cat "$rcf")
	case "$rc" in
	0 | 4) ;;
	*)
		status=1
		if silent_failure; then
			echo "not ok 1 $t # exit $rc without a failed result"
		fi
		;;
	esac
	echo "# selftests: refcnt: $t: exit $rc ($(awk -v t0="$t0" \
		'{ printf "%.1f", $1 - t0 }' /proc/uptime) s)"
done <<EOF
$(selected "$@")
EOF
exit $status
