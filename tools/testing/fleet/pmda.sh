# shellcheck shell=bash
# fleet-guest: pmdarefcnt's tests under a real pmcd (sourced).

PMDA_HOME=/var/lib/pcp/pmdas/refcnt

pmda_installed() {
	grep -q '^refcnt[[:space:]]' /etc/pcp/pmcd/pmcd.conf 2>/dev/null
}

# pminfo -f output as "metric value" and "metric[instance] value" lines.
pminfo_values() {
	pminfo -f "$@" | awk '
		/^[^ ]/ { m = $1; next }
		/^ +value / { print m, $2; next }
		/^ +inst \[/ {
			name = $0; sub(/^[^"]*"/, "", name); sub(/".*/, "", name)
			print m "[" name "]", $NF
		}'
}

# The PMDA's values in refcnt-exporter's names, to compare with module_view.
pmda_view() {
	pminfo_values refcnt.node refcnt.access refcnt.feed | awk '
		function node(i) { sub(/^node/, "", i); return i }
		{
			split($1, a, /[][]/); m = a[1]; i = a[2]; v = $2
			n = split(m, p, ".")
			if (p[2] == "node" && p[3] == "table_bytes")
				printf "refcnt_node_table_bytes{node=\"%s\"} %s\n", node(i), v
			else if (p[2] == "node" && (p[3] == "local" || p[3] == "remote" || p[3] == "lost"))
				printf "refcnt_node_%s_references_total{node=\"%s\"} %s\n", p[3], node(i), v
			else if (p[2] == "node" && p[3] != "sets" && p[3] != "cnodeid")
				printf "refcnt_node_%s_total{node=\"%s\"} %s\n", p[3], node(i), v
			else if (p[2] == "access") {
				split(i, b, ":from")
				printf "refcnt_%sreferences_total{node=\"%s\",from_node=\"%s\"} %s\n",
					p[3] == "lost" ? "lost_" : "", node(b[1]), b[2], v
			} else if (p[2] == "feed")
				printf "refcnt_feed_%s_total{feed=\"%s\"} %s\n", p[3], i, v
		}' | sort
}

pmda_values_equal() {
	module_view >"$W/pwant"
	pmda_view >"$W/pgot"
	equal_views "$W/pwant" "$W/pgot" && return 0
	echo "pminfo -f refcnt.loaded refcnt.nodes:"
	pminfo -f refcnt.loaded refcnt.nodes
	echo "the agent's log:"
	tail -n 20 /var/log/pcp/pmcd/refcnt.log
	return 1
}

pmda_install() {
	rm -rf "$PMDA_HOME"
	cp -a "$PMDA_DIR" "$PMDA_HOME" &&
		cd "$PMDA_HOME" && ./Install </dev/null
	local rc=$?
	cd /refcnt || return 1
	return "$rc"
}

# pmval's rate over two samples: start pmval (4 s interval, 2 rates), wait
# until it has made its first fetch, inject REFS, and read the rates: the
# first is REFS over the time between the fetches (4 s plus the guest's
# scheduling delay: the rate may be at most 25% lower, never higher
# than 1%), the second exactly 0 (nothing injected in between).
pmval_rate() { # REFS
	local out=$W/pmval.out tries r1 r2 want
	pmval -t 4 -s 2 -f 3 -i node0:from4 refcnt.access.references >"$out" 2>&1 &
	for ((tries = 0; tries < 100; tries++)); do
		grep -q '^interval:' "$out" && break
		sleep 0.1
	done
	sleep 1
	"$REF" inject 0 4 "$1"
	wait $!
	cat "$out"
	read -r r1 r2 < <(awk '/node0:from4/ { t = 1; next } t && NF == 1 { printf "%s ", $1 }' "$out")
	want=$(($1 / 4))
	echo "rates: '$r1' '$r2'; want about $want, then 0.000"
	[ -n "$r1" ] && [ "$r2" = 0.000 ] &&
		awk -v r="$r1" -v w="$want" 'BEGIN { exit !(r <= w * 1.01 && r >= w * 0.75) }'
}

# dbpmda on the agent alone: descriptors (type, instance domain,
# semantics, units) and help text exactly as the help file says.
dbpmda_session() {
	local out=$W/dbpmda.out
	dbpmda -n "$PMDA_HOME/root" -ie >"$out" 2>&1 <<-EOF
		open pipe $PMDA_HOME/pmdarefcnt -d 510
		desc refcnt.access.references
		desc refcnt.node.table_bytes
		desc refcnt.loaded
		text refcnt.node.references
		text indom 510.1
		fetch refcnt.nodes
		quit
	EOF
	cat "$out"
	awk '/desc refcnt.access.references/ { s = 1 } s && /Semantics/ { print; exit }' "$out" |
		grep -q 'Semantics: counter  Units: count' || { echo "access.references: not a count counter"; return 1; }
	grep -A2 'desc refcnt.access.references' "$out" | grep -q 'Data Type: 64-bit unsigned int  InDom: 510.1' ||
		{ echo "access.references: not U64 in 510.1"; return 1; }
	grep -A3 'desc refcnt.node.table_bytes' "$out" | grep -q 'Semantics: instant  Units: byte' ||
		{ echo "node.table_bytes: not instant bytes"; return 1; }
	grep -A3 'desc refcnt.loaded' "$out" | grep -q 'InDom: PM_INDOM_NULL' ||
		{ echo "refcnt.loaded: has an instance domain"; return 1; }
	# The help file's entry, line for line: dbpmda shows the one-line
	# text in brackets, then the long text.
	awk '/^@ refcnt.node.references /{ sub(/^@ [^ ]+ /, ""); print "[" $0 "]"; s = 1; next }
		s && /^@/ { exit } s && NF' "$PMDA_HOME/help" >"$W/help.want"
	awk '/text refcnt.node.references/ { s = 1; getline; next } s && /^dbpmda>/ { exit } s' \
		"$out" >"$W/help.got"
	diff "$W/help.want" "$W/help.got" || { echo "help text differs"; return 1; }
	grep -A6 'fetch refcnt.nodes' "$out" | grep -q ' value 3 ' ||
		{ echo "fetch refcnt.nodes: not 3"; return 1; }
}

pmda_tests() {
	if ! check "pmdarefcnt installs with its Install script under the running pmcd" pmda_install; then
		return
	fi
	check "pminfo -f refcnt: values equal the module's statistics and RCB_SETS_READ exactly" \
		pmda_values_equal
	# What a user sees, for the log.
	pminfo -f refcnt.node.references refcnt.node.remote refcnt.access.references | diag
	check "pminfo: refcnt.loaded 1, refcnt.nodes 3 (the node devices)" \
		sh -c "pminfo -f refcnt.loaded | grep -q 'value 1' && pminfo -f refcnt.nodes | grep -q 'value 3'"
	check "pmval over two samples: the rate of the 6000 references injected between them" \
		pmval_rate 6000
	check "pminfo -f refcnt equals the module after the pmval injection" pmda_values_equal
	check "dbpmda: descriptors and help text of pmdarefcnt" dbpmda_session
}

pmda_says_gone() {
	local v
	pminfo -f pmcd.numagents >/dev/null || { echo "pmcd does not answer"; return 1; }
	v=$(pminfo_values refcnt)
	echo "$v"
	echo "$v" | grep -qx 'refcnt.loaded 0' || { echo "refcnt.loaded is not 0"; return 1; }
	# Nothing else but a zero count of nodes.
	! echo "$v" | grep -v -x -e 'refcnt.loaded 0' -e 'refcnt.nodes 0' | grep -q .
}

pmda_bad_input() {
	[ -x "$PMDA_DIR/pmdarefcnt" ] || return 0
	"$PMDA_DIR/pmdarefcnt" --no-such-option >/dev/null 2>"$W/pe1"
	check "pmdarefcnt --no-such-option: non-zero exit, the first line names it" \
		bad_option "$W/pe1" $? --no-such-option
	"$PMDA_DIR/pmdarefcnt" -H lots >/dev/null 2>"$W/pe2"
	check "pmdarefcnt -H lots: non-zero exit, the first line names it" \
		bad_option "$W/pe2" $? lots
}

pmda_remove() {
	pmda_installed || return 0
	(cd "$PMDA_HOME" && ./Remove </dev/null) >"$W/remove.out" 2>&1
	check "pmdarefcnt's Remove script takes refcnt out of pmcd and the PMNS" \
		sh -c "cat $W/remove.out; ! pminfo refcnt 2>/dev/null | grep -q ."
}
