#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# Run every refcnt selftest binary next to this script, in order, as root,
# with refcnt.ko loaded (default parameters). REFCNT_KO=<path to refcnt.ko>
# lets lifecycle_test unload and reload it; without it those tests skip.
#
# Output: each binary's own TAP stream as it runs, framed by
#   # selftests: refcnt: <binary>
#   # selftests: refcnt: <binary>: exit <status>
# then one summary line
#   # refcnt selftests: <P> passed, <F> failed, <S> skipped
# counted over the "ok"/"not ok" lines of all binaries. A binary that
# exits non-zero, dies, or reports fewer results than it planned counts
# one more failure. Exit status: 0 if nothing failed, 1 otherwise.

cd "$(dirname "$0")" || exit 1

TESTS="devices_test info_test info_test32 slots_test slots_test32
ioctl_errors_test ioctl_errors_test32 mmap_test counters_test events_test
stress_test lib_info_test lib_locate_test lib_range_test lib_workflow_test
lib_hwcntrs_test lib_datarange_test feeds_test priv_test fuzz_test
fault_stress_test tools_test lifecycle_test lifecycle_stress_test"

if [ "$(id -u)" != 0 ]; then
	echo "# refcnt selftests: warning: not running as root"
fi

run_all() {
	for t in $TESTS; do
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
				;;
			esac
			continue
		fi
		"./$t" 2>&1
		echo "# selftests: refcnt: $t: exit $?"
	done
}

run_all | awk '
function finish_binary(rc) {
	if (rc != 0 && rc != 4 && bin_fail == 0)
		fail++			# died or failed without a "not ok"
	else if (plan > bin_results && bin_fail == 0)
		fail++			# stopped early
}
{ print; fflush() }
/^# selftests: refcnt: [^ ]*$/ { plan = 0; bin_results = 0; bin_fail = 0; next }
/^# selftests: refcnt: .*: exit [0-9]+$/ { finish_binary($NF + 0); next }
/^1\.\.[0-9]+/ { plan = substr($1, 4) + 0; next }
/^not ok / { fail++; bin_fail++; bin_results++; next }
/^ok .*# [Ss][Kk][Ii][Pp]/ { skip++; bin_results++; next }
/^ok / { pass++; bin_results++; next }
END {
	printf "# refcnt selftests: %d passed, %d failed, %d skipped\n",
		pass, fail, skip
	exit fail ? 1 : 0
}'
