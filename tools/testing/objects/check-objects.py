#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""check-objects.py: the host half of objects-check. Checks the reports the
guests made (objects-guest, redis-guest) and prints TAP.

  check-objects.py exact DIR TRUTH.csv SOURCE.c [PROGRAM]
  check-objects.py bad DIR SOURCE.c
  check-objects.py redis DIR

DIR holds the files the guest printed. SOURCE.c is obj-workload.c, whose
"// line:NAME" comments give the lines each object must be named after;
PROGRAM is the obj-workload the guest ran (where its .bss arrays are).
"""
import csv
import json
import os
import re
import sys

results = []


def tap(ok, name, diag=""):
    results.append((bool(ok), name, diag))


def finish():
    print("1..%d" % len(results))
    for i, (ok, name, diag) in enumerate(results, 1):
        print("%s %d %s" % ("ok" if ok else "not ok", i, name))
        if diag and not ok:
            for line in str(diag).splitlines():
                print("#   " + line)
    return 0 if all(r[0] for r in results) else 1


def marks(source):
    """NAME -> line number of each "// line:NAME" comment."""
    lines = {}
    with open(source) as f:
        for n, line in enumerate(f, 1):
            m = re.search(r"// line:(\w+)", line)
            if m:
                lines[m.group(1)] = n
    return lines


def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        tap(False, "%s is a JSON report" % os.path.basename(path), e)
        return None


def rcs(d):
    """NAME -> exit status of each refcnt-run the guest made (rc file)."""
    out = {}
    try:
        with open(os.path.join(d, "rc")) as f:
            for line in f:
                p = line.split()
                if len(p) >= 3 and p[0] == "@@rc":
                    out[p[1]] = int(p[2])
    except OSError:
        pass
    return out


def find(objs, pred):
    return [o for o in objs if pred(o)]


def named(objs, source_lines, key, func, kind=None, alloc=None):
    """The object named func at the line of mark key, checked and returned."""
    line = source_lines[key]
    hits = find(objs, lambda o: o.get("function") == func and
                o.get("line") == line and
                (o.get("file") or "").endswith("obj-workload.c"))
    if kind:
        hits = [o for o in hits if o["kind"] == kind]
    if alloc:
        hits = [o for o in hits if o.get("alloc") == alloc]
    tap(len(hits) == 1, "%s: named %s (obj-workload.c:%d)%s" %
        (key, func, line, " as " + alloc if alloc else ""),
        "objects: %s" % [(o["name"], o.get("function"), o.get("file"),
                          o.get("line"), o.get("alloc")) for o in objs[:40]])
    return hits[0] if hits else None


def variable(objs, source_lines, name):
    line = source_lines[name]
    hits = find(objs, lambda o: o["kind"] == "variable" and o["name"] == name)
    ok = len(hits) == 1 and hits[0].get("line") == line and \
        (hits[0].get("file") or "").endswith("obj-workload.c")
    tap(ok, "variable %s named, declared at obj-workload.c:%d" % (name, line),
        "found: %s" % [(o["name"], o.get("file"), o.get("line")) for o in hits])
    return hits[0] if hits else None


def hot_bad(d):
    """The nodes obj-workload chose, from its output."""
    try:
        with open(os.path.join(d, "exact.out")) as f:
            m = re.search(r"misplaced on node (\d+), used from node (\d+)", f.read())
            return int(m.group(2)), int(m.group(1))
    except (OSError, AttributeError):
        return None, None


def truth_of(truth_csv, paddrs):
    """The truth's references by accessing node, summed over paddrs."""
    want = set(paddrs)
    refs = {}
    seen = set()
    if not os.path.isfile(truth_csv):
        return refs, 0
    with open(truth_csv) as f:
        rd = csv.DictReader(f)
        for row in rd:
            pa = int(row["paddr"], 0)
            if pa not in want:
                continue
            seen.add(pa)
            for k, v in row.items():
                if k.startswith("n") and k[1:].isdigit() and int(v):
                    refs[k[1:]] = refs.get(k[1:], 0) + int(v)
    return refs, len(seen)


def mis_pages(d):
    try:
        with open(os.path.join(d, "pages")) as f:
            return [int(l.split()[1], 0) for l in f if l.startswith("misplaced ")]
    except OSError:
        return []


def check_exact(d, truth_csv, source, binary=None):
    lines = marks(source)
    rc = rcs(d)
    tap(rc.get("exact") == 0, "exact: refcnt-run exits with the program's status 0",
        "rc %s" % rc.get("exact"))
    r = load(os.path.join(d, "exact.json"))
    if not r:
        return
    objs = r["objects"]
    feeds = [f["name"] for f in r["feeds"]["used"]]
    tap(feeds and feeds[0] == "hub" and r["feeds"]["weight"] == 1,
        "exact: the report names the hub feed at period 1 as the feed that counted",
        r["feeds"])
    # The workers' loads at period 1 overrun the hub's rings on their
    # vCPUs: the report must say how many records the device dropped.
    hub = [f for f in r["feeds"]["used"] if f["name"] == "hub"]
    dropped = hub[0].get("dropped") if hub else None
    try:
        text = open(os.path.join(d, "exact.txt")).read()
    except OSError:
        text = ""
    said = re.search(r"it dropped (\d+) records during the run", text)
    tap(isinstance(dropped, int) and
        (int(said.group(1)) == dropped if said else dropped == 0),
        "exact: the records the hub dropped in the run are in the JSON and the text (%s)"
        % dropped, said.group(0) if said else "no line in the text report")
    # Every reference counted: each interval is the count itself.
    bad = [o["name"] for o in objs
           if o["refs_interval"] != [o["refs"]] * 2 or
           o["refs_by_node_interval"] != {c: [v, v] for c, v in o["refs_by_node"].items() if v}]
    tap(r["feeds"]["exact"] is True and not bad,
        "exact: the counts are exact, each object's and node's 95% interval the count itself",
        "exact %s; not so: %s" % (r["feeds"].get("exact"), bad[:5]))
    variable(objs, lines, "grid")
    variable(objs, lines, "table")
    named(objs, lines, "make_buffer", "make_buffer", "allocation", "malloc")
    named(objs, lines, "calloc", "run_workers", "allocation", "calloc")
    mis = named(objs, lines, "place_badly", "place_badly", "allocation", "mmap-file")
    scr = named(objs, lines, "make_scratch", "make_scratch", "allocation", "malloc")
    if scr:
        tap(scr["freed"] and scr["refs"] > 0,
            "make_scratch: freed before the exit, its counts up to the free kept",
            "freed %s refs %s" % (scr["freed"], scr["refs"]))
    hot, bad = hot_bad(d)
    if mis:
        adv = mis["advice"]
        tap(adv["action"] == "move" and adv["node"] == hot,
            "place_badly: advised to move to node %s (its pages are on %s)" % (hot, bad),
            adv)
        tap(mis["home_nodes"] and list(mis["home_nodes"]) == [str(bad)],
            "place_badly: its pages are on node %s" % bad, mis["home_nodes"])
        tap(mis["lost"] is not None and mis["lost_by_node"] is not None,
            "place_badly: its lost references are shown beside its count", mis["lost"])
        tap(mis.get("before") and mis["before"]["pages_present"] == len(mis_pages(d)),
            "place_badly: its pages' counts at its mmap() read by the tracker (present already)",
            mis.get("before"))
        paddrs = mis_pages(d)
        truth, n = truth_of(truth_csv, paddrs)
        got = {}
        for k, v in list(mis["refs_by_node"].items()) + list((mis["lost_by_node"] or {}).items()):
            if v:
                got[k] = got.get(k, 0) + v
        tap(paddrs and n == len(paddrs) and got == truth and
            os.path.isfile(truth_csv),
            "place_badly: refcnt's counts (references + lost, less those at its mmap) equal the truth's for its %d pages, node by node"
            % len(paddrs),
            "refcnt %s (lost %s)\ntruth  %s (%d of %d pages in the truth)"
            % (got, mis["lost_by_node"], truth, n, len(paddrs)))
    # Every object with references is named: no bare addresses in the program.
    prog = [o for o in objs if o["kind"] in ("allocation", "allocation site")
            and o.get("stack") and o["stack"][0].get("module") == "obj-workload"]
    bare = [o["name"] for o in prog if re.match(r"^(0x|obj-workload\+)", o["name"])]
    tap(prog and not bare, "every allocation of the program named by function (%d)" % len(prog),
        bare)
    for o in objs:
        if o["kind"] == "variable" and o.get("module", "").endswith("obj-workload"):
            pass
    tap(r["node_matrix"]["refs"] and sum(map(sum, r["node_matrix"]["refs"])) > 0,
        "the node x node matrix has the references")
    try:
        text = open(os.path.join(d, "exact.txt")).read()
    except OSError:
        text = ""
    check_bss_beyond(objs, text, lines, binary)
    check_zero_page(objs, text, lines)
    check_tracker_memory(r, text)
    check_no_advice(r, text)
    check_perl(d)


def rows(text, name):
    """The text report's object rows of the object called name."""
    return [l for l in text.splitlines()
            if re.match(r"^\s+\d+\s+%s\s" % re.escape(name), l)]


def file_backed_end(binary):
    """The end of the program's last file-backed page (its last PT_LOAD's
    file part), and field's address, from the ELF file; None if unknown."""
    import subprocess
    try:
        ph = subprocess.run(["readelf", "-lW", binary], capture_output=True,
                            text=True, check=True).stdout
        sy = subprocess.run(["nm", binary], capture_output=True, text=True,
                            check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return None, None
    end = 0
    for l in ph.splitlines():
        p = l.split()
        if p and p[0] == "LOAD":
            end = max(end, int(p[2], 16) + int(p[4], 16))
    field = [int(l.split()[0], 16) for l in sy.splitlines() if l.endswith(" field")]
    return (end + 4095) & ~4095, field[0] if field else None


def check_bss_beyond(objs, text, lines, binary):
    """field: a .bss array past the last file-backed page, named with its
    file:line (libdwfl's modules cover only the file mappings)."""
    if binary:
        end, addr = file_backed_end(binary)
        tap(end and addr and addr >= end,
            "field starts beyond obj-workload's last file-backed page (0x%x >= 0x%x)"
            % (addr or 0, end or 0))
    variable(objs, lines, "field")
    want = r"^\s+\d+\s+field\s+obj-workload\.c:%d\s+variable\s+1M\s" % lines["field"]
    got = rows(text, "field")
    tap(len(got) == 1 and re.match(want, got[0]),
        "field's report line: field obj-workload.c:%d variable 1M ..." % lines["field"],
        "got: %s" % got)


def check_zero_page(objs, text, lines):
    """make_lookup's table, read and never written: its pages map the
    shared zero page, whose counts are not its own: no references, no
    advice, and the report says why."""
    lk = named(objs, lines, "lookup", "make_lookup", "allocation", "memalign")
    if lk:
        tap(lk["refs"] == 0 and lk["pages_counted"] == 0 and
            lk.get("pages_zero") and lk["pages_zero"] == lk["pages_present"] and
            lk["pages_zero"] >= 1024,
            "make_lookup: its %s pages map the zero page: 0 references of its own"
            % lk.get("pages_zero"),
            "refs %s, pages present %s, counted %s, zero %s" %
            (lk["refs"], lk["pages_present"], lk["pages_counted"], lk.get("pages_zero")))
        tap(lk["advice"]["action"] == "none" and
            lk["advice"].get("why_not") == "never written (zero page)",
            "make_lookup: no advice, because it was never written (zero page)", lk["advice"])
    want = (r"^\s+\d+\s+make_lookup\s+obj-workload\.c:%d\s+memalign\s+4M\s+\d+\s+0"
            r"(\s+0)+\s+-\s+0%%\s+-\s+- never written \(zero page\)$" % lines["lookup"])
    got = rows(text, "make_lookup")
    tap(len(got) == 1 and re.match(want, got[0]),
        "make_lookup's report line: make_lookup obj-workload.c:%d memalign 4M N 0 0... - 0%% - "
        "- never written (zero page)" % lines["lookup"], "got: %s" % got)


def check_tracker_memory(r, text):
    """librefcnt-track.so's own memory (its table of live objects, its
    query buffers) is not the program's: left out of its objects, and
    the report says so."""
    own = r["tracking"].get("own_memory") or []
    tap(len(own) >= 2 and all(m["size"] > 0 for m in own),
        "the report names the tracker's own memory (%d mappings)" % len(own),
        r["tracking"])
    # A mapping of its own (the live table's is MAP_NORESERVE: no merging).
    bad = [(o["name"], o["range"]) for o in r["objects"] if o["kind"] != "tracker"
           for m in own if m["start"] <= o["start"] and o["end"] <= m["end"]]
    tap(own and not bad, "no object of the program holds the tracker's own memory", bad)
    want = (r"^   allocations tracked by librefcnt-track\.so: .*; its own memory "
            r"\(\d+ pages present in %d mappings\) is left out of the objects$" % len(own))
    tap(re.search(want, text, re.M),
        "the report's tracking line: ...; its own memory (N pages present in %d mappings) "
        "is left out of the objects" % len(own),
        "got: %s" % [l for l in text.splitlines() if "allocations tracked" in l])


def check_no_advice(r, text):
    """No move advice for a file's code or read-only data (the page
    cache's, shared), nor for an object with a negligible share of the
    references (under 1%): each says why in the advice column."""
    total = sum(x["refs"] for x in r["regions"])
    files = [o for o in r["objects"] if o["kind"] == "mapping" and
             re.search(r" (code|read-only)$", o["name"])]
    bad = [(o["name"], o["advice"]["action"], o["advice"].get("why_not"))
           for o in files if o["advice"]["action"] != "none" or
           o["advice"].get("why_not") != "shared file pages"]
    tap(files and not bad,
        "code and read-only data of files (%d): no advice, \"shared file pages\"" % len(files),
        bad)
    lib = [l for l in text.splitlines() if re.match(r"^\s+\d+\s+libc\.so\.6 (code|read-only)\s", l)]
    tap(lib and all(l.endswith(" - shared file pages") for l in lib),
        "libc's code and read-only data: report lines end \"- shared file pages\" (%d)"
        % len(lib), "got: %s" % lib)
    small = [o for o in r["objects"] if o["refs"] and 100 * o["refs"] < total]
    bad = [(o["name"], o["refs"], o["advice"]["action"]) for o in small
           if o["advice"]["action"] != "none"]
    tap(not bad, "no advice for objects with under 1%% of the %d references (%d of them)"
        % (total, len(small)), bad)
    bad = [(o["name"], o["refs"], o["advice"].get("why_not")) for o in small
           if o not in files and o["refs"] >= r.get("min_refs", 0) and
           o["advice"].get("why_not") != "negligible share"]
    tap(small and not bad, "objects with under 1% of the references say \"negligible share\"",
        bad)


def check_bad(d, source):
    lines = marks(source)
    rc = rcs(d)
    for name in ("text", "stripped", "static", "fork", "forkf", "plain", "tracked"):
        tap(rc.get(name) == 0, "%s: exit status 0" % name, "rc %s" % rc.get(name))
    # The text report names the objects too.
    try:
        text = open(os.path.join(d, "text.txt")).read()
    except OSError:
        text = ""
    for want in ("make_buffer", "place_badly", "run_workers", "grid", "table"):
        tap(re.search(r"^\s+\d+\s+%s\b" % want, text, re.M) or
            re.search(r"\* %s \(" % want, text),
            "text report lists %s" % want)
    tap("counted by" in text and "its counts:" in text,
        "text report names the feed that counted and what its counts mean")
    # Stripped: by mapping and allocation site, and symbols said missing.
    s = load(os.path.join(d, "stripped.json"))
    if s:
        miss = s["tracking"]["symbols_missing"] or ""
        tap("obj-workload-stripped" in miss,
            "stripped: the report says the program's symbols are missing", miss)
        allocs = [o for o in s["objects"] if o["kind"] == "allocation"]
        tap(len(allocs) >= 3 and all(re.match(r"obj-workload-stripped\+0x", o["name"])
                                     for o in allocs if o["stack"] and
                                     o["stack"][0]["module"] == "obj-workload-stripped"),
            "stripped: its allocations are objects, by site address",
            [o["name"] for o in allocs])
        tap(not [o for o in s["objects"] if o["kind"] == "variable" and
                 o["name"] in ("grid", "table")],
            "stripped: its static arrays are not named (no symbol table)")
    st = load(os.path.join(d, "static.json"))
    if st:
        tr = st["tracking"]
        tap(tr["static"] and not tr["tracked"] and "statically linked" in tr["status"],
            "static: no preload, and the report says why", tr)
        variable(st["objects"], lines, "table")
        tap(not [o for o in st["objects"] if o["kind"] == "allocation"],
            "static: no allocation objects (heap by mapping)")
    f = load(os.path.join(d, "fork.json"))
    try:
        ftext = open(os.path.join(d, "fork.txt")).read()
    except OSError:
        ftext = ""
    if f:
        tap(len(f["processes"]) == 1, "fork+exec without -f: one process traced",
            [p["pid"] for p in f["processes"]])
    tap(re.search(r"not traced .*--follow-children\): \d+", ftext),
        "fork+exec without -f: the child is reported as not traced")
    if f:
        tap(len(f.get("untraced_pids") or []) == 1,
            "fork+exec without -f: the JSON lists the child in untraced_pids",
            f.get("untraced_pids"))
    ff = load(os.path.join(d, "forkf.json"))
    if ff:
        kids = [p for p in ff["processes"] if not p["main"]]
        ok = len(kids) == 1 and kids[0]["tracking"]["tracked"] and [
            o for o in kids[0]["objects"] if o.get("function") == "child_main" and
            o.get("line") == lines["child"]]
        tap(ok, "fork+exec with -f: the child is traced, its allocation named child_main (obj-workload.c:%d)"
            % lines["child"],
            [(p["pid"], p["command"], [o["name"] for o in p["objects"][:8]]) for p in kids])
    try:
        plain = open(os.path.join(d, "plain.out")).read()
        tracked = open(os.path.join(d, "tracked.out")).read()
    except OSError:
        plain, tracked = "", "?"

    def norm(s):
        return re.sub(r"pid \d+", "pid N", s)
    tap(plain and norm(plain) == norm(tracked),
        "the tracker does not change the program's output (pids aside)",
        "plain:\n%s\ntracked:\n%s" % (plain, tracked))


def third_party(d, run, feed, exe):
    """The report of run (a program nobody here wrote, exe when the report
    does not say) under feed: the feed named, allocations tracked, and its
    objects named by function from the program's own symbols."""
    r = load(os.path.join(d, "%s.json" % run))
    if not r:
        return None
    used = [f["name"] for f in r["feeds"]["used"]]
    tap(used and used[0] == feed, "%s: the report names the %s feed" % (run, feed), used)
    tap(r["snapshot"] and r["objects"],
        "%s: its counters read at its exit, %d objects" % (run, len(r["objects"])),
        "snapshot %s" % r["snapshot"])
    tap(r["tracking"]["tracked"], "%s: allocations tracked" % run, r["tracking"]["status"])
    allocs = [o for o in r["objects"] if o["kind"] in ("allocation", "allocation site")]
    named_ = [o for o in allocs if o.get("function") and
              not re.match(r"^(0x|[\w.+-]+\+0x)", o["function"])]
    tap(len(named_) >= 3, "%s: its objects named by function (%d of %d)"
        % (run, len(named_), len(allocs)), [o["name"] for o in allocs[:20]])
    # Debian's redis-server is a link to redis-check-rdb: the module is
    # the file the process ran.
    exe = os.path.basename(r["tracking"].get("executable") or exe)
    tap(len([o for o in named_ if o.get("module") == exe]) >= 3,
        "%s: named from %s's own symbols" % (run, exe),
        [(o["name"], o.get("module")) for o in named_[:10]])
    tap(sum(o.get("refs") or 0 for o in named_) > 0,
        "%s: its named objects have references" % run,
        [(o["name"], o.get("refs")) for o in named_[:10]])
    return r


def check_perl(d):
    """Debian's perl in the exact stage's boot: its report under the hub,
    and the same output and status with refcnt-run and its tracker."""
    rc = rcs(d)
    tap(rc.get("perl-plain") == 0 and rc.get("perl-hub") == 0,
        "perl without refcnt-run and under it with the hub feed exits with status 0",
        "rc %s %s" % (rc.get("perl-plain"), rc.get("perl-hub")))
    third_party(d, "perl-hub", "hub", "perl")
    out = {}
    for run in ("perl-plain", "perl-hub"):
        try:
            out[run] = open(os.path.join(d, run + ".out")).read()
        except OSError:
            out[run] = None
    tap(out["perl-plain"] == "30000 20000 200000 1350045000\n" and
        out["perl-hub"] == out["perl-plain"],
        "perl: the same output under refcnt-run and its tracker as without", out)


def check_redis(d):
    rc = rcs(d)
    for feed in ("hinting", "hub"):
        tap(rc.get("redis-" + feed) == 0,
            "redis-server under refcnt-run --feed=%s exits with status 0" % feed,
            "rc %s" % rc.get("redis-" + feed))
        third_party(d, "redis-" + feed, feed, "redis-server")
    # Output and status unchanged by the tracker: the dataset digest.
    try:
        plain = open(os.path.join(d, "redis-plain.digest")).read().strip()
    except OSError:
        plain = ""
    for feed in ("hinting", "hub"):
        try:
            got = open(os.path.join(d, "redis-%s.digest" % feed)).read().strip()
        except OSError:
            got = "?"
        tap(plain and got == plain,
            "redis %s: the same dataset digest and replies as without refcnt-run" % feed,
            "plain %r, %s %r" % (plain, feed, got))


def main():
    if len(sys.argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    cmd, d = sys.argv[1], sys.argv[2]
    if cmd == "exact":
        check_exact(d, sys.argv[3], sys.argv[4],
                    sys.argv[5] if len(sys.argv) > 5 else None)
    elif cmd == "bad":
        check_bad(d, sys.argv[3])
    elif cmd == "redis":
        check_redis(d)
    else:
        print(__doc__, file=sys.stderr)
        return 2
    return finish()


if __name__ == "__main__":
    sys.exit(main())
