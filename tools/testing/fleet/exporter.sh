# shellcheck shell=bash
# fleet-guest: refcnt-exporter's tests (sourced).
# The exporters' pids are read by reload.sh and fleet-guest's cleanup:
# shellcheck disable=SC2034

exporter_pid=
textfile_pid=

# GET /metrics from the --listen exporter, the body on stdout; fails
# unless the answer is 200.  Bash's /dev/tcp: no HTTP client needed.
scrape() { # [ACCEPT]
	local status hdr=
	[ -n "${1:-}" ] && hdr="Accept: $1"$'\r\n'
	# A subshell: a refused connection must not end the script.
	(
		exec 3<>"/dev/tcp/127.0.0.1/$PORT" || exit 1
		printf 'GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n%s\r\n' \
			"$hdr" >&3
		timeout 20 cat <&3
	) >"$W/http.raw" || return 1
	status=$(head -n 1 "$W/http.raw" | tr -d '\r')
	[[ $status == "HTTP/1."?" 200"* ]] || { echo "HTTP answer: $status" >&2; return 1; }
	sed '1,/^\r\?$/d' "$W/http.raw"
}

# Wait until a scrape answers (the exporter just started).
wait_scrape() {
	local tries
	for ((tries = 0; tries < 50; tries++)); do
		scrape >/dev/null 2>&1 && return 0
		sleep 0.2
	done
	return 1
}

exporter_values_equal() { # FILE: the exposition equals the module's view
	module_view >"$W/want"
	exposition_view "$1" >"$W/got"
	equal_views "$W/want" "$W/got"
}

exporter_tests() {
	"$EXPORTER" >"$W/once.prom" 2>"$W/once.err"
	check "refcnt-exporter prints the metrics once (exit 0)" test $? = 0
	check "promtool check metrics passes on refcnt-exporter's output" \
		sh -c "promtool check metrics <$W/once.prom"
	check "refcnt-exporter's values equal the module's statistics and RCB_SETS_READ exactly" \
		exporter_values_equal "$W/once.prom"
	"$EXPORTER" --openmetrics >"$W/once.om" 2>&1
	check "refcnt-exporter --openmetrics ends with # EOF and has the same values" \
		same_openmetrics "$W/once.om" "$W/once.prom"

	"$EXPORTER" --listen "127.0.0.1:$PORT" 2>"$W/listen.err" &
	exporter_pid=$!
	if ! check "refcnt-exporter --listen 127.0.0.1:$PORT answers GET /metrics" wait_scrape; then
		diag <"$W/listen.err"
		return
	fi
	scrape >"$W/scrape.prom"
	grep -E '^refcnt_(up|node_references_total|node_remote_references_total|references_total)[ {]' \
		"$W/scrape.prom" | diag
	check "the scrape passes promtool check metrics" \
		sh -c "promtool check metrics <$W/scrape.prom"
	check "the scrape's values equal the module's exactly" \
		exporter_values_equal "$W/scrape.prom"
	scrape 'application/openmetrics-text; version=1.0.0' >"$W/scrape.om"
	check "a scrape asking for OpenMetrics gets it (# EOF), with the same values" \
		same_openmetrics "$W/scrape.om" "$W/scrape.prom"
	# References between two scrapes: the counter grows by exactly those.
	"$REF" inject 0 4 4321
	scrape >"$W/scrape2.prom"
	check "after 4321 more references from node 4, the scrape equals the module again" \
		exporter_values_equal "$W/scrape2.prom"
	check "refcnt_references_total{node=\"0\",from_node=\"4\"} grew by exactly 4321" \
		counter_grew "$W/scrape.prom" "$W/scrape2.prom" \
		'refcnt_references_total{node="0",from_node="4"}' 4321
	textfile_tests
}

same_openmetrics() { # OM PROM
	tail -n 1 "$1" | grep -qx '# EOF' || { echo "no # EOF at the end"; return 1; }
	diff <(exposition_view "$1") <(exposition_view "$2")
}

counter_grew() { # BEFORE AFTER SAMPLE DELTA
	local a b
	a=$(grep -F "$3 " "$1" | awk '{ print $NF }')
	b=$(grep -F "$3 " "$2" | awk '{ print $NF }')
	echo "$3: $a -> $b, want +$4"
	[ -n "$a" ] && [ -n "$b" ] && [ $((b - a)) = "$4" ]
}

# fleet-ref watch reads DIR/refcnt.prom as fast as it can while the
# exporter rewrites it every second and references keep coming.
textfile_reader() { # DIR SECONDS FAMILIES
	local pid rc
	( while :; do "$REF" inject 1 0 17; sleep 0.2; done ) &
	pid=$!
	"$REF" watch "$1/refcnt.prom" "$2" "$3"
	rc=$?
	kill "$pid"
	wait "$pid" 2>/dev/null
	return "$rc"
}

textfile_tests() {
	local dir=$W/textfile families
	mkdir -p "$dir"
	"$EXPORTER" --textfile "$dir" --once 2>"$W/tf.err"
	check "refcnt-exporter --textfile DIR --once writes DIR/refcnt.prom" test -s "$dir/refcnt.prom"
	check "the textfile passes promtool check metrics" \
		sh -c "promtool check metrics <$dir/refcnt.prom"
	check "the textfile's values equal the module's exactly" \
		exporter_values_equal "$dir/refcnt.prom"
	families=$(grep -c '^# TYPE' "$dir/refcnt.prom")
	"$EXPORTER" --textfile "$dir" --interval 1 2>"$W/tf.err" &
	textfile_pid=$!
	check "the textfile is never seen half-written (reader loop during 8 s of writes)" \
		textfile_reader "$dir" 8 "$families"
	check "no temporary file is left where the collector reads *.prom" \
		sh -c "! ls $dir | grep -v '^refcnt.prom\$' | grep '\\.prom\$'"
}
