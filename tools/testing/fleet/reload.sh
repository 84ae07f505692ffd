# shellcheck shell=bash
# fleet-guest: the module unloaded and loaded again under a running pmcd and
# a running exporter; bad input; the end (sourced).

alive() { kill -0 "$1" 2>/dev/null; }

# The monitors hold a node device open only while they read it (the
# textfile exporter every second): an rmmod that meets one of those
# moments is refused ("in use"), as it would be for an administrator, who
# tries again.  Five seconds of tries; a device held open for good fails.
rmmod_retry() {
	local i
	for i in $(seq 20); do
		rmmod refcnt 2>/dev/null && { echo "unloaded at try $i"; return 0; }
		sleep 0.25
	done
	rmmod refcnt
}

# No refcnt sample but refcnt_up 0 in a scrape.
scrape_says_gone() {
	scrape >"$W/gone.prom" || { echo "no scrape"; return 1; }
	grep -qx 'refcnt_up 0' "$W/gone.prom" || { echo "no 'refcnt_up 0'"; return 1; }
	if grep -E '^refcnt_' "$W/gone.prom" | grep -v '^refcnt_up '; then
		echo "samples left after the unload (above)"
		return 1
	fi
	promtool check metrics <"$W/gone.prom"
}

reload_tests() {
	local have_exp=0 have_pmda=0
	[ -n "$exporter_pid" ] && alive "$exporter_pid" && have_exp=1
	pmda_installed && have_pmda=1
	if [ $have_exp = 0 ] && [ $have_pmda = 0 ]; then
		skip "unload and reload under pmcd and the exporter" "neither is running"
		return
	fi
	check "rmmod refcnt with pmcd (pmdarefcnt: $have_pmda) and the exporter ($have_exp) running" \
		rmmod_retry || return
	if [ $have_exp = 1 ]; then
		check "unloaded: the exporter still serves, refcnt_up 0 and no refcnt values" \
			scrape_says_gone
	fi
	if [ $have_pmda = 1 ]; then
		check "unloaded: pmcd and pmdarefcnt still answer, refcnt metrics have no values" \
			pmda_says_gone
	fi
	check "insmod refcnt.ko again" insmod "$KO" || return
	udevadm settle 2>/dev/null
	inject_all 2
	if [ $have_exp = 1 ]; then
		scrape >"$W/back.prom"
		check "reloaded: the exporter's values are back and equal the module's" \
			exporter_values_equal "$W/back.prom"
		check "the exporter process never exited" alive "$exporter_pid"
	fi
	if [ $have_pmda = 1 ]; then
		check "reloaded: pminfo -f refcnt equals the module again" pmda_values_equal
	fi
}

# STDERR-FILE RC: non-zero exit, exactly one line that names the cause.
one_line_error() { # ERRFILE RC PATTERN
	echo "exit $2, stderr:"
	cat "$1"
	[ "$2" != 0 ] && [ "$(wc -l <"$1")" = 1 ] && grep -Eq -- "$3" "$1"
}

# Unknown option: non-zero exit, the first line names the option (a usage
# text may follow, as for every refcnt tool).
bad_option() { # ERRFILE RC OPTION
	echo "exit $2, stderr:"
	cat "$1"
	[ "$2" != 0 ] || return 1
	head -n 1 "$1" | grep -qF -- "$3"
}

bad_input_tests() {
	local rc
	if [ -x "$EXPORTER" ]; then
		"$EXPORTER" --no-such-option 2>"$W/e1" >/dev/null
		check "refcnt-exporter --no-such-option: exit 2, the first line names it" \
			bad_option "$W/e1" $? --no-such-option
		mkdir -p "$W/ro"
		mount -t tmpfs -o ro tmpfs "$W/ro"
		"$EXPORTER" --textfile "$W/ro" --once 2>"$W/e2" >/dev/null
		rc=$?
		check "refcnt-exporter --textfile on a read-only directory: one line, non-zero exit" \
			one_line_error "$W/e2" $rc "$W/ro"
		umount "$W/ro"
		"$EXPORTER" --textfile "$W/nonexistent" --once 2>"$W/e3" >/dev/null
		rc=$?
		check "refcnt-exporter --textfile on a missing directory: one line, non-zero exit" \
			one_line_error "$W/e3" $rc "$W/nonexistent"
		# The --listen exporter still holds $PORT (or a stand-in does).
		if [ -z "$exporter_pid" ] || ! alive "$exporter_pid"; then
			"$EXPORTER" --listen "127.0.0.1:$PORT" 2>/dev/null &
			exporter_pid=$!
			sleep 1
		fi
		timeout 20 "$EXPORTER" --listen "127.0.0.1:$PORT" 2>"$W/e4" >/dev/null
		rc=$?
		check "refcnt-exporter --listen on a port in use: one line, non-zero exit" \
			one_line_error "$W/e4" $rc "127.0.0.1:$PORT"
		"$EXPORTER" --listen "nowhere" 2>"$W/e5" >/dev/null
		rc=$?
		check "refcnt-exporter --listen nowhere: one line, non-zero exit" \
			one_line_error "$W/e5" $rc nowhere
	fi
	pmda_bad_input
}

cleanup() {
	[ -n "$textfile_pid" ] && kill "$textfile_pid" 2>/dev/null
	[ -n "$exporter_pid" ] && kill "$exporter_pid" 2>/dev/null
	wait 2>/dev/null
	pmda_remove
	/etc/init.d/pmcd stop >/dev/null 2>&1
	# pmcd's agents exit with it; refcnt-vm's rmmod then proves nobody
	# kept a node device open.
	sleep 1
}
