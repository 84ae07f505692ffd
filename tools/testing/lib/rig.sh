# shellcheck shell=bash
# SPDX-License-Identifier: GPL-2.0
#
# tools/testing/lib/rig.sh: what the rig's scripts share, sourced, never run:
#
#   PROG=${0##*/}                       # optional: the name messages carry
#   . "$ROOT/tools/testing/lib/rig.sh"
#
# Messages, one line each on stderr, prefixed with the program's name:
#   die MSG...    "PROG: error: MSG" and exit RIG_DIE_STATUS (default 1)
#   say MSG...    "PROG: MSG"
#
# TAP, as kselftest writes it and tools/testing/tap-summary counts it:
#   ok DESC                   "ok N DESC"
#   notok DESC [DIAG...]      "not ok N DESC", then "#   DIAG" per argument
#   skip DESC REASON          "ok N DESC # SKIP REASON"
#   ok_if STATUS DESC         ok if STATUS is 0, else notok (ok_if $? "...")
#   check DESC CMD...         runs CMD: ok, or notok with the end of its
#                             output as diagnostics; returns CMD's status
#   diag                      stdin as "# " lines
#   tap_plan N                "1..N"
# TAP_N counts the results so far, TAP_FAILED the failures.  Every line goes
# through tap_emit, which prints it; a script that must hold its results
# back (the plan first, for a run that may never end) redefines tap_emit
# after sourcing this file.

: "${PROG:=${0##*/}}"

die() {
	echo "$PROG: error: $*" >&2
	exit "${RIG_DIE_STATUS:-1}"
}

say() { echo "$PROG: $*" >&2; }

TAP_N=0
TAP_FAILED=0

tap_emit() { printf '%s\n' "$*"; }

tap_plan() { tap_emit "1..$1"; }

ok() {
	TAP_N=$((TAP_N + 1))
	tap_emit "ok $TAP_N $1"
}

notok() {
	local l
	TAP_N=$((TAP_N + 1))
	TAP_FAILED=$((TAP_FAILED + 1))
	tap_emit "not ok $TAP_N $1"
	shift
	for l in "$@"; do tap_emit "#   $l"; done
}

skip() {
	TAP_N=$((TAP_N + 1))
	tap_emit "ok $TAP_N $1 # SKIP $2"
}

ok_if() {
	if [ "$1" = 0 ]; then ok "$2"; else notok "$2"; fi
}

diag() {
	local l
	while IFS= read -r l; do tap_emit "# $l"; done
}

check() {
	local desc=$1 out rc t0=$SECONDS
	shift
	out=$("$@" 2>&1)
	rc=$?
	[ $((SECONDS - t0)) -lt 3 ] || desc+=" ($((SECONDS - t0))s)"
	if [ "$rc" = 0 ]; then
		ok "$desc"
	else
		notok "$desc"
		printf '%s\n' "$out" | tail -n 40 | diag
	fi
	return "$rc"
}
