# SPDX-License-Identifier: GPL-2.0
"""hub-check: the hub device's tests, one guest boot per topology (see
USAGE), and the check of their exact windows against the truth."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence, Tuple

from . import hostcmd as H
from .tapout import Writer

PROG = "hub-check"

USAGE = """\
hub-check: the hub device's tests (Documentation/testing.rst, "The hub
device"), as TAP.

  hub-check [--kernel VER|PATH] [--topologies "four 72"] [--log-dir DIR]
            [--timeout SECS] [--tests "NAME..."] [--reloads N]
            [--vm-arg ARG]... [--pre-cmd CMD]

One guest boot per topology, with the device at period 1 (refcnt-vm
--hub), the truth plugin counting in a window (topologies it accepts,
up to 64 nodes), a foreign ivshmem device beside it, and
tools/testing/hub-garble writing garbage into the device from the host
when the last test asks, and the truth's LLC model (16 KiB per node) for
the emulated PMU's memory-side and latency-filtered modes.  The guest
runs selftests/refcnt/hub_test (its TAP lines are passed on); then the
host checks that the counts of every page of its exact test, of
pmu_samples' PEBS rounds and of pmu_session's range equal the truth's,
counter by counter (every reference; the LLC model's misses for
memory-side and LDLAT).  --kernel takes what refcnt-vm does (the debug
kernel's vmlinux too); --timeout is per guest (default 900 s); each
--vm-arg goes to refcnt-vm; --tests runs only the hub tests named
(hub_test -t), without the truth unless exact, pmu_samples or
pmu_session is one of them; --reloads sets reload_streaming's loads
(default 20, 3 on 72 nodes).
In the first topology's guest, before hub_test (whose last test may
leave the device's header broken), selftests/refcnt/refcntd_pmu_test:
refcntd on the emulated PEBS stream (--tests refcntd_pmu runs it alone;
a --tests list without it, not).
--pre-cmd runs CMD in the first topology's guest before them, its
output in the same log (papi-check --guest-args: the PAPI tests share
this boot); the truth's dumps of its windows ("papi-window: N" lines)
come before hub_test's and are skipped.
Needs make module, make selftests and make truth.  Exit status 0 iff
every test passed.
"""

# The tests whose windows the truth checks.
TRUTH_TESTS = ("exact", "pmu_samples", "pmu_session")
# The LLC model pmu_samples' memory-side and latency-filtered rounds
# need: small, so that their loads miss it (hub_test.c, pmu_line_loads()).
TRUTH_LLC = "16K:16"
NOTES = re.compile(r"^(hub-rates|hub-exact: [0-9]|hub-pmu: |hub-garbage|"
                   r"refcntd-pmu: )")


@dataclass
class Opts:
    kernel: str = ""
    topologies: List[str] = field(default_factory=lambda: ["four", "72"])
    log_dir: str = ""
    timeout: str = "900"
    vm_args: List[str] = field(default_factory=list)
    tests: List[str] = field(default_factory=list)
    reloads: Optional[int] = None
    pre_cmd: str = ""


def parse_args(argv: Sequence[str], build: str) -> Opts:
    o = H.parse(argv, values=("--kernel", "--topologies", "--log-dir",
                              "--timeout", "--pre-cmd", "--tests",
                              "--reloads"), multi=("--vm-arg",))
    v = o.values
    opts = Opts(kernel=v.get("--kernel", ""),
                log_dir=v.get("--log-dir", os.path.join(build, "logs")),
                timeout=v.get("--timeout", "900"),
                vm_args=o.multi.get("--vm-arg", []),
                tests=v.get("--tests", "").split(),
                pre_cmd=v.get("--pre-cmd", ""))
    if "--topologies" in v:
        opts.topologies = v["--topologies"].split()
    r = v.get("--reloads", "")
    if r:
        if not re.fullmatch(r"[1-9][0-9]*", r):
            raise H.Die(f"--reloads {r}: want a number of loads, 1 or more")
        opts.reloads = int(r)
    for t in opts.tests:
        if not re.fullmatch(r"[a-z0-9_]+", t):
            raise H.Die(f"--tests: '{t}' is not a test name")
    return opts


@dataclass(frozen=True)
class Plan:
    """What the guests run: refcntd_pmu_test (first guest only) and
    hub_test with FILTER (its -t options), or not."""
    refcntd: bool
    hub: bool
    filter: str


def plan(tests: Sequence[str]) -> Plan:
    return Plan(refcntd=not tests or "refcntd_pmu" in tests,
                hub=list(tests) != ["refcntd_pmu"],
                filter="".join(f" -t {t}" for t in tests
                               if t != "refcntd_pmu"))


def reloads(topo: str, arg: Optional[int]) -> int:
    """Loading the module for 72 nodes takes about 10 s under TCG: 3
    loads there, the full 20 on the smaller machines."""
    if arg is not None:
        return arg
    return 3 if topo == "72" else 20


def wants_truth(topo: str, tests: Sequence[str], p: Plan) -> bool:
    return topo != "72" and p.hub and (
        not tests or any(t in tests for t in TRUTH_TESTS))


def guest_command(pre: str, p: Plan, first: bool, n_reloads: int) -> str:
    cmd = pre if first else ""
    if p.refcntd and first:
        cmd += "./refcntd_pmu_test; "
    if p.hub:
        cmd += f"HUB_GARBLE=1 HUB_RELOADS={n_reloads} ./hub_test{p.filter}"
    return cmd


def vm_args(kernel: str, topo: str, ko: str, hub_file: str, timeout: str,
            log: str, extra: Sequence[str], build: str, work: str,
            truth: Optional[str]) -> List[str]:
    args = ["--kernel", kernel, "--topology", topo, "--module", ko,
            "--hub", "--hub-file", hub_file, "--timeout", timeout, "--quiet",
            "--log", log, *extra,
            "--file", f"{build}/selftests/hub_test:/refcnt/hub_test",
            "--file", f"{build}/selftests/refcntd_pmu_test:"
            "/refcnt/refcntd_pmu_test",
            "--file", f"{build}/tools/refcntd:/refcnt/tools/refcntd",
            "--qemu-arg", "-object", "--qemu-arg",
            f"memory-backend-file,id=foreign,share=on,mem-path={work}/foreign,"
            "size=1M",
            "--qemu-arg", "-device", "--qemu-arg", "ivshmem-plain,memdev=foreign"]
    if truth:
        args += ["--truth", truth, "--truth-window"]
    return args + ["--truth-llc", TRUTH_LLC]


_RUN = re.compile(r"^#  RUN +(hub|refcntd_pmu)\.")
_SKIP = re.compile(r"^(not ok|ok) [0-9]+ # SKIP")
_RESULT = re.compile(r"^(not ok|ok) [0-9]+ (hub|refcntd_pmu)\.")


def results(log_lines: Sequence[str], topo: str) -> List[Tuple[bool, str]]:
    """The guest's own results, named by topology: (passed, description).
    The harness prints a skipped test as "ok N # SKIP reason", without
    its name: it comes from the test's "#  RUN" line."""
    out: List[Tuple[bool, str]] = []
    name = ""
    for line in log_lines:
        if _RUN.match(line):
            name = line.split()[2]
        elif _SKIP.match(line):
            out.append((True, f"{name} {topo} "
                        + re.sub(r"^ok [0-9]+ ", "", line).strip()))
        elif _RESULT.match(line):
            rest = re.sub(r"^(not ok|ok) [0-9]+ ", "", line)
            w = rest.split(" ")[0]
            out.append((not line.startswith("not"),
                        f"{w} {topo}{rest[len(w):]}".strip()))
    return out


class _Truth:
    """The truth's dumps of the windows, FILE.N (every reference) or
    FILE.N.llc (the LLC model's misses): counts by page and node."""

    def __init__(self, base: str) -> None:
        self.base = base
        self.t: Dict[Tuple[str, int], float] = {}
        self.nc = 0

    def load(self, n: int, suffix: str, diags: List[str]) -> int:
        self.t = {}
        self.nc = 0
        path = f"{self.base}.{n}{suffix}"
        for line in H.lines(path):
            f = line.split(",")
            if f[0] == "set":
                self.nc = len(f) - 6
                continue
            for c in range(self.nc):
                self.t[(f[1] if len(f) > 1 else "", c)] = \
                    H.num(f[5 + c]) if 5 + c < len(f) else 0
        if not self.nc:
            diags.append(f"no truth dump {path}")
            return 1
        return 0


def truth_compare(log_lines: Sequence[str],
                  truth: str) -> Tuple[bool, List[str]]:
    """The pages of the exact test, of pmu_samples' rounds and of
    pmu_session's range against the truth: for every page the guest
    printed, each counter's count equals the truth's references from the
    nodes that counter counts, in the truth's dump of that window.  Each
    window ends with a dump mark, and the guest prints one line after
    each: "hub-exact: node" for a pair, "hub-pmu-truth: round" for a
    round.  The dumps of --pre-cmd's windows ("papi-window: N") come
    first.  Whether all agree, and the lines that say so."""
    dump = sum(1 for x in log_lines if re.match(r"papi-window: [0-9]", x))
    tr = _Truth(truth)
    out: List[str] = []
    bad = pair = pages = rounds = pmu_pages = 0
    rnd = ""

    def page(what: str, f: List[str]) -> None:
        nonlocal bad
        per = int(H.num(f[6])) if len(f) > 6 else 0
        k = 0
        while 9 + k <= len(f):
            want = sum(tr.t.get((f[2], c), 0)
                       for c in range(k * per, (k + 1) * per) if c < tr.nc)
            got = f[8 + k]
            if H.num(got) != want or not re.fullmatch(r"-?[0-9.]+", got):
                if bad < 5:
                    out.append(f"{what} page {f[2]} counter {k}: refcnt "
                               f"{got}, truth {int(want)}")
                bad += 1
            k += 1

    for line in log_lines:
        f = line.split()
        if line.startswith("hub-exact: node "):
            dump += 1
            bad += tr.load(dump, "", out)
            pair += 1
        if line.startswith("hub-exact: page "):
            pages += 1
            page(f"pair {pair}", f)
        if line.startswith("hub-pmu-truth: round "):
            dump += 1
            llc = len(f) > 4 and f[4] == "llc"
            bad += tr.load(dump, ".llc" if llc else "", out)
            rnd = f[2] if len(f) > 2 else ""
            rounds += 1
        if line.startswith("hub-pmu-truth: page "):
            pmu_pages += 1
            page(rnd, f)
    out.append(f"{pair} pairs, {pages} pages; {rounds} PMU rounds, "
               f"{pmu_pages} pages; {bad} counters differ")
    return bad == 0 and pages + pmu_pages > 0, out


def notes(log_lines: Sequence[str]) -> List[str]:
    return [x for x in log_lines if NOTES.match(x)]


def garble_line(path: str) -> str:
    for x in H.lines(path):
        if x.startswith("hub-garble"):
            return x
    return "no garbage written"


def needed(build: str, rel: str) -> List[str]:
    return [f"{build}/{rel}/refcnt.ko", f"{build}/{rel}/refcnt_hub.ko",
            f"{build}/selftests/hub_test", f"{build}/selftests/refcntd_pmu_test",
            f"{build}/tools/refcntd", f"{build}/truth/refcnt-truth.so"]


def main(argv: Sequence[str], root: str) -> int:
    build = H.build_dir(root)
    o = parse_args(argv, build)
    p = plan(o.tests)
    kernel = o.kernel or H.default_kernel(root)
    rel = H.release(kernel)
    ko = f"{build}/{rel}/refcnt.ko"
    for f in needed(build, rel):
        if not os.path.isfile(f):
            raise H.Die(f"no {f} (make module KVER={rel} selftests tools "
                        "truth)")
    os.makedirs(o.log_dir, exist_ok=True)
    work = tempfile.mkdtemp(prefix="hub-check.",
                            dir=os.environ.get("TMPDIR") or "/tmp")
    w = Writer()
    try:
        for i, topo in enumerate(o.topologies):
            boot(root, build, o, p, kernel, rel, ko, topo, i == 0, work, w)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    w.plan(w.n)
    return 0 if w.failed == 0 else 1


def boot(root: str, build: str, o: Opts, p: Plan, kernel: str, rel: str,
         ko: str, topo: str, first: bool, work: str, w: Writer) -> None:
    """One guest: hub-garble beside it, its results, the truth's check."""
    log = os.path.join(o.log_dir, f"hub-{rel}-{topo}.log")
    hub_file = f"/dev/shm/refcnt-hub-check.{os.getpid()}.{topo}"
    truth = f"{work}/truth-{topo}.csv" if wants_truth(topo, o.tests, p) \
        else None
    args = vm_args(kernel, topo, ko, hub_file, o.timeout, log, o.vm_args,
                   build, work, truth)
    open(log, "w").close()
    garble_out = f"{work}/garble.out"
    with open(garble_out, "wb") as gout:
        garble = subprocess.Popen(
            [os.path.join(root, "tools/testing/hub-garble"), hub_file, log],
            stdout=gout, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    t0 = time.time()
    cmd = guest_command(o.pre_cmd, p, first, reloads(topo, o.reloads))
    try:
        rc = H.call([H.refcnt_vm(root), *args, "--", cmd],
                    both=f"{work}/vm.out")
    finally:
        garble.terminate()
        garble.wait()
    log_lines = H.lines(log)
    for passed, desc in results(log_lines, topo):
        if passed:
            w.ok(desc)
        else:
            w.notok(desc, [f"see {log}"])
    secs = int(time.time() - t0)
    if rc != 0:
        w.notok(f"hub guest {rel}/{topo} ({secs}s)",
                [f"refcnt-vm exit {rc}: "
                 + " ".join(H.tail(f"{work}/vm.out", 5))])
    else:
        w.ok(f"hub guest {rel}/{topo} ({secs}s; {garble_line(garble_out)})")
    if truth:
        name = f"hub exact, pmu == truth {rel}/{topo}"
        if os.path.isfile(truth) and os.path.getsize(truth) > 0:
            good, out = truth_compare(log_lines, truth)
        else:
            good, out = False, ["no truth written"]
        if good:
            w.ok(f"{name}: {out[-1]}")
        else:
            w.notok(name, out)
    for x in notes(log_lines):
        w.emit(f"# {x}")
    if os.path.exists(hub_file):
        os.unlink(hub_file)


def entry(argv: Sequence[str], root: str) -> int:
    return H.entry(PROG, main, argv, root, USAGE)
