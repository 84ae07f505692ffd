# SPDX-License-Identifier: GPL-2.0
"""trace-check --guest: one boot of the four-node guest (2*512M/1, none,
256M/0, 0/1) with the truth plugin's traces on, running
tools/testing/trace/trace-guest (trace-pattern's known accesses; a
host-made trace replayed into the counters: 3000 + 700 references to a
page of node 0, 2500 + 400 to one of node 1, 300 to one of node 3, from
nodes 0, 1 and 4: counters fold, none may peg; the analyses on the live
counters).  Then, on the host, the traces: every record of the pattern's
pages and every marker exact, and the table the traces imply equal to the
truth table of the same window, byte for byte."""
from __future__ import annotations

import collections
import glob
import os
import re
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, List, Optional, Sequence

from . import hostcmd as H

if TYPE_CHECKING:
    from .tracecheck import Host

TESTS = 7

# The host-made traces refcnt-replay delivers: (thread, node, text).
REPLAY = ((0, 0, "repeat 3000\nload 8 0x7f0000000000 paddr 0x10000000 node 0\n"
           "repeat 400\nstore 8 0x7f0000001040 paddr 0x30000040 node 1\n"),
          (1, 1, "repeat 2500\nload 8 0x7f0000001000 paddr 0x30000000 node 1\n"
           "repeat 700\nload 4 0x7f0000000100 paddr 0x10000100 node 0\n"),
          (2, 4, "repeat 300\nload 8 0x7f0000002000 paddr 0x44000000 node 3\n"))
# A fold event per 1792 references of a counter; tdist's bins of 1000 s.
BIN_NS = 1000000000000


@dataclass(frozen=True)
class Pattern:
    """trace-pattern's "X" line: the pages it used (virtual, physical)
    and the accesses it made to each kind."""
    xva: int
    xpa: int
    yva: int
    ypa: int
    k: str


def pattern(lines: Sequence[str]) -> Optional[Pattern]:
    for x in lines:
        if x.startswith("trace-pattern: X"):
            f = (x.split() + [""] * 9)[:9]
            try:
                return Pattern(H.shell_int(f[2]), H.shell_int(f[3]),
                               H.shell_int(f[5]), H.shell_int(f[6]), f[7])
            except ValueError:
                return None
    return None


def thread_of(info: Sequence[str], node: int) -> str:
    """refcnt-trace info's thread (its "thread N:" line) that ran on
    NODE."""
    t = ""
    for x in info:
        if x.startswith("thread "):
            f = x.split()
            t = f[1] if len(f) > 1 else ""
        if f"node {node}," in x:
            return t.replace(":", "", 1)
    return ""


def _on(a: str, page: str) -> bool:
    """Whether address A is on the page whose number, in hex, is PAGE."""
    return a.startswith(page) and len(a) == len(page) + 3


def pattern_records(printed: Sequence[str], p: Pattern) -> List[str]:
    """The records of the pattern's pages, counted: "N thread access size
    kind vaddr paddr node", sorted."""
    x, y = f"{p.xva >> 12:#x}", f"{p.yva >> 12:#x}"
    c: collections.Counter[str] = collections.Counter()
    for line in printed:
        f = line.split()
        if len(f) > 10 and f[3] in ("load", "store") and \
                (_on(f[6], x) or _on(f[6], y)):
            c[" ".join((f[0], f[3], f[4], f[5], f[6], f[8], f[10]))] += 1
    return sorted(f"{n} {r}" for r, n in c.items())


def pattern_want(p: Pattern, n0: str, n1: str) -> List[str]:
    k = p.k
    return sorted([
        f"{k} thread={n0} store 8 fixed {p.xva:#x} {p.xpa:#x} 0",
        f"{k} thread={n0} load 4 fixed {p.xva + 8:#x} {p.xpa + 8:#x} 0",
        f"{k} thread={n0} load 8 float {p.xva + 16:#x} {p.xpa + 16:#x} 0",
        f"{k} thread={n0} store 1 fixed {p.yva:#x} {p.ypa:#x} 1",
        f"{k} thread={n1} load 8 fixed {p.xva:#x} {p.xpa:#x} 0",
        f"{k} thread={n1} store 2 fixed {p.yva + 32:#x} {p.ypa + 32:#x} 1"])


def markers(printed: Sequence[str]) -> List[str]:
    return [" ".join((f[0], f[4], f[5])) for f in (x.split() for x in printed)
            if len(f) > 5 and f[3] == "marker"]


def markers_want(n0: str, n1: str) -> List[str]:
    """In time order: start, phase, stop and resume one vCPU, stop."""
    return [f"thread={n0} 4 0", f"thread={n0} 0 101", f"thread={n0} 1 102",
            f"thread={n0} 2 103", f"thread={n1} 0 201", f"thread={n0} 3 0"]


def tdist_line(glines: Sequence[str]) -> str:
    """The line refcnt-tdist prints of the module's two fold events, in
    the bin of 1000 s the first one falls in."""
    t = "0"
    for x in glines:
        f = x.split()
        if len(f) > 2 and f[1] == "event:":
            t = f[2]
            break
    try:
        b = H.shell_int(t) // BIN_NS
    except ValueError:
        b = int(H.num(t)) // BIN_NS
    return (f"trace-guest: tdist: events 2, bin width {BIN_NS} ns, bins 1 "
            f"(from {b * BIN_NS} to {(b + 1) * BIN_NS} ns)")


def fail_all(h: Host, reason: Sequence[str]) -> None:
    for _ in range(TESTS):
        h.w.notok("guest: not run", reason)


def run(h: Host, build: str, kernel: str, log: str) -> None:
    ko = f"{build}/{kernel}/refcnt.ko"
    if not (os.path.isfile(ko) and
            os.path.isfile(f"{build}/truth/refcnt-truth.so") and
            os.access(f"{build}/truth/trace-pattern", os.X_OK)):
        fail_all(h, [f"no {ko} or build/truth/ (make module KVER={kernel}; "
                     "make truth)"])
        return
    os.makedirs(h.path("rp"), exist_ok=True)
    for t, node, text in REPLAY:
        h.run("refcnt-trace", "make", "--phys", "-t", str(t), "-n", "3",
              "-N", str(node), f"rp/rp.3.{t}", stdin=text)
    work = h.work
    t0 = time.time()
    script = os.path.join(h.root, "tools/testing/trace/trace-guest")
    rc = h.call([H.refcnt_vm(h.root), "--kernel", kernel, "--topology",
                 "four", "--quiet", "--log", log, "--module", ko, "--truth",
                 f"{work}/g.csv", "--truth-window", "--trace", f"{work}/gt",
                 "--file", f"{h.tools}:/refcnt/tools",
                 "--file", f"{work}/rp:/refcnt/rp",
                 "--file", f"{build}/truth/trace-pattern:/refcnt/trace-pattern",
                 "--file", f"{script}:/refcnt/guest.sh",
                 "--", "sh /refcnt/guest.sh"], out="guest.out", err="guest.err")
    glines = [x for x in H.lines(log)
              if re.match(r"(trace-guest|trace-pattern):", x)]
    h.write("g.lines", "".join(x + "\n" for x in glines))
    if rc != 0 or not glob.glob(glob.escape(work) + "/gt.*.0"):
        fail_all(h, [f"the guest run failed (exit {rc}): "]
                 + H.tail(h.path("guest.err"), 4))
        return
    h.w.emit(f"# the guest run took {int(time.time() - t0)} s")
    check(h, glines)


def check(h: Host, glines: Sequence[str]) -> None:
    work = h.work
    p = pattern(glines)
    h.run("refcnt-trace", "info", f"{work}/gt", out="gi.txt")
    info = H.lines(h.path("gi.txt"))
    n0, n1 = thread_of(info, 0), thread_of(info, 1)
    h.run("refcnt-trace", "print", f"{work}/gt", out="gp.txt")
    printed = H.lines(h.path("gp.txt"))
    pat = pattern_records(printed, p) if p else []
    want = pattern_want(p, n0, n1) if p else ["no trace-pattern: X line"]
    h.write("gpat.txt", "".join(x + "\n" for x in pat))
    h.write("gpat.want", "".join(x + "\n" for x in want))
    h.same("guest: the pattern's records exact: access, size, register "
           "kind, virtual and physical address, node; none while its vCPU "
           "was stopped", "@W/gpat.want", "gpat.txt")
    h.write("gm.txt", "".join(x + "\n" for x in markers(printed)))
    h.write("gm.want", "".join(x + "\n" for x in markers_want(n0, n1)))
    h.same("guest: the markers exact, in time order (start, phase, stop "
           "and resume one vCPU, stop)", "@W/gm.want", "gm.txt")
    h.run("refcnt-replay", "-n", "--ram", "0:512,1:512,3:256", "--online",
          "0,1,3,4", "-o", "gw.csv", f"{work}/gt", out=os.devnull)
    h.same("guest: the table the traces imply is the truth of the same "
           "window, byte for byte", "@W/g.csv", "gw.csv")
    h.expect("guest: replay as traced: refcnt-dump equals the table the "
             "trace implies", "g.lines", "trace-guest: as-traced equal")
    h.expect("guest: replay placed rr1: the same", "g.lines",
             "trace-guest: rr1 equal")
    h.expect("guest: refcnt-tdist on the module's fold events (one per 1792 "
             "of a counter)", "g.lines", tdist_line(glines))
    h.expect("guest: refcnt-policy and refcnt-sharing on the live counters",
             "g.lines", "trace-guest: policy: data references 6900 on 3 "
             "pages (2 shared); memory on nodes 0,1,3",
             "trace-guest: sharing: RxTxL21: touched pages 3")
