# shellcheck shell=bash
# fleet-guest: refcnt-exporter's tests (sourced).

exporter_pid=
textfile_pid=

scrape() { # to stdout; fails if nothing answers
	wget -q -T 10 -O - "http://127.0.0.1:$PORT/metrics"
}

# Wait until a scrape answers (the exporter just started).
wait_scrape() {
	local i
	for i in $(seq 50); do
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
		cat "$W/listen.err" | diag
		return
	fi
	scrape >"$W/scrape.prom"
	check "the scrape passes promtool check metrics" \
		sh -c "promtool check metrics <$W/scrape.prom"
	check "the scrape's values equal the module's exactly" \
		exporter_values_equal "$W/scrape.prom"
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

# Read DIR/refcnt.prom as fast as possible while the exporter rewrites it
# every second and references keep coming: every read must be a complete
# exposition, every version (inode) must keep its content (a rename per
# write, never a rewrite in place), and there must be new versions.
textfile_reader() { # DIR SECONDS FAMILIES
	local f=$1/refcnt.prom end=$((SECONDS + $2)) reads=0 bad=0 ino sum
	declare -A seen=()
	while [ $SECONDS -lt $end ]; do
		if exec 3<"$f"; then
			ino=$(stat -L -c %i /dev/fd/3)
			cat <&3 >"$W/read.prom"
			exec 3<&-
			reads=$((reads + 1))
			sum=$(md5sum <"$W/read.prom")
			if [ "$(tail -c 1 "$W/read.prom" | od -An -tx1 | tr -d ' ')" != 0a ] ||
				! grep -q '^refcnt_up 1$' "$W/read.prom" ||
				[ "$(grep -c '^# TYPE' "$W/read.prom")" != "$3" ] ||
				{ [ -n "${seen[$ino]:-}" ] && [ "${seen[$ino]}" != "$sum" ]; }; then
				bad=$((bad + 1))
				cp "$W/read.prom" "$W/bad.prom.$bad"
			fi
			seen[$ino]=$sum
		fi
		"$REF" inject 1 0 17 2>/dev/null
	done
	echo "$reads reads, $bad incomplete or rewritten in place, ${#seen[@]} versions"
	[ "$bad" = 0 ] && [ "$reads" -gt 20 ] && [ "${#seen[@]}" -ge 3 ]
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
