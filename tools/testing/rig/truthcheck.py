# SPDX-License-Identifier: GPL-2.0
"""truth-check: the tests of the refcnt-truth QEMU plugin (see USAGE):
bad input refused, and the truth table of a guest's known loads exact."""
from __future__ import annotations

import glob
import os
import re
import shutil
import tempfile
from dataclasses import dataclass
from typing import Dict, List, Sequence, Tuple

from . import hostcmd as H
from .tapout import Writer

PROG = "truth-check"

USAGE = """\
truth-check: the tests of the refcnt-truth QEMU plugin, as TAP.

  truth-check [--kernel VER] [--topologies "four ..."] [--log FILE]

 - the plugin is exact: in a guest, truth-exact makes exactly K loads on
   each of P pages from a CPU of node A on memory of node B, for every
   node with CPUs x every node with memory; the truth must show exactly K
   references from A and none from another node on each page, at the
   address /proc/self/pagemap gave (one guest boot per topology); and in
   the LLC view (--truth-llc 4M:16) exactly one miss per page
 - string instructions as hardware makes their references: in the same
   boot, truth-exact -s S makes S rounds of rep stosb and rep movsq on
   other pages of each pair; the truth must show a reference per cache
   line each instruction touched (2 x 64 S on a destination page, 64 S
   on a source page), not one per element as TCG runs them
 - the cost counter (make accuracy's cost%) is exact: in the same boot,
   truth-exact -c names a 4-instruction function to it and calls it C
   times in a window; the summary must give exactly C calls and 4 C
   instructions, none left open
 - bad input: an unknown plugin option or value, an unwritable truth file, a
   guest the plugin cannot map, a guest that does not finish: one clear
   line each, non-zero exit, no truth file left behind
Needs `make truth` (build/truth/).  Exit status 0 iff every test passed.
"""

K = 1000
P = 16
C = 1000
S = 3
BAD_INPUT_TESTS = 8
PER_TOPOLOGY = 4
QEMU = ["qemu-system-x86_64", "-display", "none", "-nodefaults", "-machine",
        "pc"]


@dataclass(frozen=True)
class BadInput:
    """NAME: COMMAND (QEMU with the plugin, or refcnt-vm) fails with one
    line on stderr matching RE and leaves no FILE or FILE.tmp."""
    name: str
    regex: str
    file: str
    cmd: Tuple[str, ...]


def bad_inputs(plugin: str, vm: str, kernel: str, work: str,
               bad_file: str) -> List[BadInput]:
    """The bad-input tests in their order; BAD_FILE is the truth file
    nobody may write (the test runs with WORK read-only)."""
    t = f"{work}/t.csv"
    w = re.escape(work)
    one = (vm, "--kernel", kernel, "--topology", "one", "--quiet")
    return [
        BadInput("unknown plugin option: one line, QEMU does not start",
                 "^refcnt-truth: unknown option 'bogus'", t,
                 (*QEMU, "-plugin", f"{plugin},out={t},ram=0:512,online=0,"
                  "bogus=1")),
        BadInput("hub_start with a value neither on nor off: one line, QEMU "
                 "does not start",
                 "^refcnt-truth: hub: hub_start=maybe: want on or off", t,
                 (*QEMU, "-plugin", f"{plugin},out={t},ram=0:512,online=0,"
                  "hub_start=maybe")),
        BadInput("refcnt-vm --truth-opt with an unknown option",
                 "refcnt-truth: unknown option 'bogus'", t,
                 (*one, "--truth", t, "--truth-opt", "bogus=1", "--",
                  "true")),
        BadInput("unwritable truth file, plugin",
                 f"^refcnt-truth: cannot write {w}/no/t\\.csv\\.tmp",
                 f"{work}/no/t.csv",
                 (*QEMU, "-plugin", f"{plugin},out={work}/no/t.csv,"
                  "ram=0:512,online=0")),
        BadInput("unwritable truth file, refcnt-vm: refused before booting",
                 "^refcnt-vm: error: --truth: cannot write", bad_file,
                 (*one, "--truth", bad_file, "--", "true")),
        BadInput("guest RAM above the PCI hole: refcnt-vm refuses",
                 "^refcnt-vm: error: --truth: cannot map a guest with 4096M",
                 t, (vm, "--kernel", kernel, "--topology", "4G/1", "--quiet",
                     "--truth", t, "--", "true")),
        BadInput("guest RAM above the PCI hole: the plugin refuses",
                 "^refcnt-truth: cannot map a guest with 4096 MiB", t,
                 (*QEMU, "-plugin", f"{plugin},out={t},ram=0:2048,"
                  "ram=1:2048,online=0:1")),
        BadInput("a guest that does not finish leaves no truth",
                 "no truth written: the guest did not finish", t,
                 (*one, "--timeout", "4", "--truth", t, "--", "sleep",
                  "100")),
    ]


def judge_bad_input(b: BadInput, rc: int, err: str, w: Writer) -> None:
    match = [x for x in err.split("\n") if re.search(b.regex, x)]
    left = glob.glob(glob.escape(b.file) + "*")
    if rc != 0 and len(match) == 1 and not os.path.exists(b.file) \
            and not os.path.exists(b.file + ".tmp"):
        w.ok(f"{b.name} (exit {rc}: {match[0]})")
    else:
        w.notok(b.name, [f"exit {rc}, {len(match)} matching lines, file "
                         f"left: {' '.join(left)}",
                         f"stderr: {err[:600].rstrip(chr(10))}"])


def run_bad_input(b: BadInput, work: str, w: Writer) -> None:
    rc = H.call(b.cmd, out=f"{work}/out", err=f"{work}/err")
    judge_bad_input(b, rc, H.read(f"{work}/err"), w)


def check_exact(topo: str, table: Sequence[str], guest: Sequence[str],
                kind: str = "page") -> Tuple[bool, List[str]]:
    """Every "truth-exact: KIND PADDR from A refs K" line of GUEST (KIND
    "page", or "string page") against the truth TABLE (CSV, its header
    first): K references from node A, none from another.  Whether all
    agree, and what was found."""
    out: List[str] = []
    col: Dict[str, int] = {}
    rows: Dict[str, List[str]] = {}
    for i, line in enumerate(table):
        f = line.split(",")
        if i == 0:
            col = {x[1:]: j for j, x in enumerate(f)
                   if re.fullmatch(r"n[0-9]+", x)}
        elif len(f) > 1:
            rows[f[1]] = f
    pages = bad = 0
    for line in guest:
        if not line.startswith(f"truth-exact: {kind} "):
            continue
        f = line[len(f"truth-exact: {kind} "):].split()
        pa, frm, k = (f[i] if len(f) > i else "" for i in (0, 2, 4))
        pages += 1
        if pa not in rows:
            bad += 1
            if bad < 5:
                out.append(f"{pa}: no row (expected {k} from node {frm})")
            continue
        row = rows[pa]
        for nid, j in col.items():
            want = k if nid == frm else "0"
            got = row[j] if j < len(row) else ""
            if H.num(got) != H.num(want) or got == "":
                bad += 1
                if bad < 5:
                    out.append(f"{pa}: {got} references from node {nid}, "
                               f"expected {want}")
    if not pages:
        return False, ["no truth-exact output"]
    out.append(f"{topo}: {pages} pages checked, {bad} wrong")
    return bad == 0, out


def cost(summary: Sequence[str]) -> str:
    """The cost counter's calls, instructions in windows and calls left
    open, summed over the vCPUs of the truth's summary."""
    c = wi = o = 0.0
    for line in summary:
        f = line.split()
        if not f or f[0] != "vcpu":
            continue
        for i in range(len(f) - 1):
            if f[i] == "cost_calls":
                c += H.num(f[i + 1])
            elif f[i] == "cost_window":
                wi += H.num(f[i + 1])
            elif f[i] == "cost_open":
                o += H.num(f[i + 1])
    return f"{int(c)} {int(wi)} {int(o)}"


def llc_view(guest: Sequence[str]) -> List[str]:
    """The LLC view: the first of the K loads of a page misses the node's
    4 MiB cache; the other K - 1 hit (16 lines, nothing evicts them)."""
    return [re.sub(r" refs [0-9]*$", " refs 1", x) for x in guest]


def exactness(vm: str, kernel: str, topo: str, log: str, work: str,
              w: Writer) -> None:
    csv = f"{work}/exact-{topo}.csv"
    rc = H.call([vm, "--kernel", kernel, "--topology", topo, "--quiet",
                 "--log", log, "--truth", csv, "--truth-window",
                 "--truth-llc", "4M:16", "--", "/refcnt/truth/truth-exact",
                 "-p", str(P), "-k", str(K), "-c", str(C), "-s", str(S),
                 "all"],
                out=os.devnull, err=f"{work}/err")
    if rc != 0 or not os.path.isfile(csv) or os.path.getsize(csv) == 0:
        w.notok(f"exact on {topo}: guest run failed (exit {rc})",
                H.tail(f"{work}/err", 5))
        w.notok(f"LLC misses on {topo}: guest run failed")
        w.notok(f"cost on {topo}: guest run failed")
        w.notok(f"string instructions on {topo}: guest run failed")
        return
    guest = [x for x in H.lines(log) if x.startswith("truth-exact: ")]
    good, res = check_exact(topo, H.lines(csv), guest)
    if good:
        w.ok(f"exact on {topo}: {K} loads on each page from its node only, "
             "at pagemap's addresses")
        for x in res:
            w.emit(f"#   {x}")
    else:
        w.notok(f"exact on {topo}", res)
    good, res = check_exact(topo, H.lines(csv + ".llc"), llc_view(guest))
    if good:
        w.ok(f"LLC misses on {topo}: exactly 1 per page, from its node only")
        for x in res:
            w.emit(f"#   {x}")
    else:
        w.notok(f"LLC misses on {topo}", res)
    good, res = check_exact(topo, H.lines(csv), guest, "string page")
    if good:
        w.ok(f"string instructions on {topo}: {S} rounds of rep stosb and "
             "rep movsq, a reference per line each")
        for x in res:
            w.emit(f"#   {x}")
    else:
        w.notok(f"string instructions on {topo}", res)
    # The cost counter: C calls of cost_probe(), 4 instructions each.
    res_cost = cost(H.lines(csv + ".summary")) \
        if os.path.isfile(csv + ".summary") else ""
    want = f"{C} {4 * C} 0"
    if any(x.startswith(f"truth-exact: cost {C} calls of 4 instructions")
           for x in guest) and res_cost == want:
        w.ok(f"cost on {topo}: {C} calls of a 4-instruction function, "
             f"{4 * C} instructions")
    else:
        w.notok(f"cost on {topo}", [f"calls, instructions, open: "
                                    f"'{res_cost}', expected '{want}'"])


def main(argv: Sequence[str], root: str) -> int:
    build = H.build_dir(root)
    o = H.parse(argv, values=("--kernel", "--topologies", "--log"))
    plugin = f"{build}/truth/refcnt-truth.so"
    kernel = o.values.get("--kernel") or H.default_kernel(root)
    topos = o.values.get("--topologies", "four").split()
    log = o.values.get("--log", f"{build}/logs/truth-guest.log")
    if not os.path.isfile(plugin):
        raise H.Die(f"no {plugin} (make truth)")
    vm = H.refcnt_vm(root)
    work = tempfile.mkdtemp(prefix="truth-check.",
                            dir=os.environ.get("TMPDIR") or "/tmp")
    w = Writer()
    try:
        # The plan first, as kselftest does.
        w.plan(BAD_INPUT_TESTS + PER_TOPOLOGY * len(topos))
        # root writes anywhere: a file under /proc cannot be created by
        # anyone.
        bad_file = "/proc/refcnt-truth/t.csv" if os.geteuid() == 0 \
            else f"{work}/t.csv"
        for b in bad_inputs(plugin, vm, kernel, work, bad_file):
            readonly = b.file == bad_file and "refused before" in b.name
            if readonly:
                os.chmod(work, 0o555)
            try:
                run_bad_input(b, work, w)
            finally:
                os.chmod(work, 0o755)
        for t in topos:
            exactness(vm, kernel, t, log, work, w)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0 if w.failed == 0 else 1


def entry(argv: Sequence[str], root: str) -> int:
    return H.entry(PROG, main, argv, root, USAGE)
