# SPDX-License-Identifier: GPL-2.0
"""hub-bench: the hub device's benchmark (see USAGE): three boots, and
the figures read from their logs."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from typing import List, Sequence

from . import hostcmd as H

PROG = "hub-bench"

USAGE = """\
hub-bench: the hub device's benchmark, part of make bench (after
refcnt-bench).  Prints figures and goals, asserts nothing.

  hub-bench [--kernel VER]

Three boots of the four-node guest (TCG, --no-debug): without the device,
with it at period 1 and at period 64 (feed on).  In each, a fixed job
(md5sum of 32 MiB in tmpfs) is timed: the hub's cost in guest wall time.
With the device, build/truth/hub-rate sweeps steady reference rates: the
highest rate the feed delivers without overrun; and the producer's
totals give the guest instructions the driver spends per drained record
(its muted instructions / records).
"""

# The guest's command, timed there.
JOB = ('dd if=/dev/zero of=/tmp/f bs=1M count=32 2>/dev/null; '
       't0=$(cut -d" " -f1 /proc/uptime); md5sum /tmp/f >/dev/null; '
       'echo "hub-job: $(awk -v a=$t0 "{ print \\$1 - a }" /proc/uptime) s"')

# The boots: name, refcnt-vm's hub options (WORK for the directory),
# whether hub-rate runs.
BOOTS = (("off", ()), ("p1", ("--hub", "--hub-opt", "hub_out=WORK/p1.out")),
         ("p64", ("--hub=64", "--hub-opt", "hub_out=WORK/p64.out")))


def boot_args(name: str, work: str) -> List[str]:
    for n, opts in BOOTS:
        if n == name:
            return [o.replace("WORK", work) for o in opts]
    raise KeyError(name)


def command(name: str) -> str:
    return JOB if name == "off" else JOB + "; ./hub-rate"


def job_s(log: Sequence[str]) -> str:
    for x in log:
        m = re.match(r"hub-job: ([0-9.]*) s", x)
        if m:
            return m.group(1)
    return ""


def best(log: Sequence[str]) -> str:
    """The highest rate without overrun."""
    r = ""
    for x in log:
        f = x.split()
        if x.startswith("hub-rate: rate") and len(f) > 6 and \
                H.num(f[6]) == 0:
            r = f[2]
    return r if r and H.num(r) else "none"


def per_record(out: Sequence[str], log: Sequence[str]) -> str:
    """The driver's guest instructions per drained record."""
    insns = 0.0
    for x in out:
        f = x.split()
        for i in range(len(f) - 1):
            if f[i] == "muted_insns":
                insns += H.num(f[i + 1])
    records = 0.0
    for x in log:
        m = re.match(r"hub-rate: records ([0-9]*) ", x)
        if m:
            records = H.num(m.group(1))
            break
    return f"{insns / records:.0f}" if records > 0 else "?"


def row(label: str, *cols: str) -> str:
    return f"{label:<34} " + " ".join(f"{c:>14}" for c in cols)


def report(kernel: str, logs: Sequence[Sequence[str]],
           outs: Sequence[Sequence[str]]) -> List[str]:
    """The figures of the boots off, p1, p64 (their logs; the p1 and
    p64 producers' totals)."""
    off, p1, p64 = logs
    lines = [f"=== hub device (QEMU TCG, four nodes, {kernel}) ===",
             row("", "no device", "period 1", "period 64"),
             row("md5sum 32 MiB in the guest (s)", job_s(off), job_s(p1),
                 job_s(p64)),
             row("highest rate without overrun (/s)", "-", best(p1),
                 best(p64)),
             row("guest insns per drained record", "-",
                 per_record(outs[0], p1), per_record(outs[1], p64)),
             "rates (references made a second by one program; delivered; "
             "overruns):"]
    lines += ["  period 1:  " + x for x in p1 if x.startswith("hub-rate: rate")]
    lines += ["  period 64: " + x for x in p64
              if x.startswith("hub-rate: rate")]
    return lines + [
        "goals: the period-64 feed delivers a busy program's references "
        "without",
        "overrun (>= 1000000/s), at < 2x the guest's wall time without the "
        "device."]


def say(text: str) -> None:
    print(f"{PROG}: {text}", file=sys.stderr, flush=True)


def main(argv: Sequence[str], root: str) -> int:
    build = H.build_dir(root)
    if argv[:1] == ["-h"] or argv[:1] == ["--help"]:
        raise H.Help()
    kernel = argv[1] if argv[:1] == ["--kernel"] and len(argv) > 1 else ""
    kernel = kernel or H.default_kernel(root)
    ko = f"{build}/{kernel}/refcnt.ko"
    if subprocess.call(["make", "-C", root, "--no-print-directory", "module",
                        f"KVER={kernel}", "truth"], stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL) != 0:
        raise H.Die("build failed (make module truth)", 1)
    work = tempfile.mkdtemp(prefix="hub-bench.",
                            dir=os.environ.get("TMPDIR") or "/tmp")
    results = H.results_start(build, root, "hub-bench", kernel, PROG, argv)
    try:
        for name, _ in BOOTS:
            rc = H.call([H.refcnt_vm(root), "--kernel", kernel, "--topology",
                         "four", "--module", ko, "--no-debug", "--quiet",
                         "--log", f"{work}/{name}.log", "--file",
                         f"{build}/truth/hub-rate:/refcnt/hub-rate",
                         *boot_args(name, work), "--", command(name)],
                        out=os.devnull, err=os.devnull)
            if rc != 0:
                say(f"the {name} boot failed (log: {work}/{name}.log)")
        out = H.Tee(results)
        for line in report(kernel, [H.lines(f"{work}/{n}.log")
                                    for n, _ in BOOTS],
                           [H.lines(f"{work}/p1.out"),
                            H.lines(f"{work}/p64.out")]):
            out(line)
    finally:
        shutil.rmtree(work, ignore_errors=True)
        say(f"results: {results}")
    return 0


def entry(argv: Sequence[str], root: str) -> int:
    return H.entry(PROG, main, argv, root, USAGE, 1)
