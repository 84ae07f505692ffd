# SPDX-License-Identifier: GPL-2.0
"""trace-bench: what the refcnt-truth plugin's traces cost (see USAGE):
the writer alone on the host, then one boot per setting."""
from __future__ import annotations

import glob
import os
import shutil
import subprocess
import sys
from typing import List, Optional, Sequence, Tuple

from . import hostcmd as H

PROG = "trace-bench"

USAGE = """\
trace-bench: what the refcnt-truth plugin's traces cost (not a test:
figures are printed and saved, never asserted).

  trace-bench [--kernel VER] [--accesses K] [--settings "off plain zstd gzip code"]

Boots the four-node guest once per setting and runs
tools/testing/truth/trace-pattern K 0 1 (6 x K accesses in the window,
plus the kernel's) under the truth plugin: "off" without traces, "plain",
"zstd" and "gzip" with traces, "code" plain with code records. Per
setting: the window's duration in the guest, the references in the
window (the truth summary's), the traces' bytes; then the cost per
reference against "off" and the bytes per million references.
First, on the host, the writer alone (trace-encode.c: the plugin's encoder
and output for 20 million references of the same shape, per compression).
Prints the figures and writes them to the run's results file,
build/results/trace-bench-<UTC time>.txt. Needs make truth.
"""

SETTINGS = "off plain zstd gzip code"
HOST_REFS = 20000000
HEADER = ("setting", "window_ms", "refs", "ns/ref", "extra_ns/ref", "bytes",
          "MB/Mref")


def setting_opts(s: str, trace: str) -> List[str]:
    """refcnt-vm's trace options for setting S, its traces at TRACE."""
    if s == "off":
        return []
    if s == "plain":
        return ["--trace", trace]
    if s in ("zstd", "gzip"):
        return ["--trace", trace, "--truth-opt", f"trace_compress={s}"]
    if s == "code":
        return ["--trace", trace, "--truth-opt", "trace_code=on"]
    raise H.Die(f"unknown setting '{s}'")


def fmt_row(cols: Sequence[str]) -> str:
    return (f"{cols[0]:<8} {cols[1]:>12} {cols[2]:>12} {cols[3]:>12} "
            f"{cols[4]:>14} {cols[5]:>14} {cols[6]:>12}")


def host_row(c: str, ns: str, wall: str, size: int) -> str:
    return fmt_row((f"host-{c}", "-", str(HOST_REFS), ns, f"({wall})",
                    str(size), f"{size / HOST_REFS:.2f}"))


def window_ns(log: Sequence[str]) -> float:
    """The last "trace-pattern: X" line's last figure: the window."""
    v = 0.0
    for x in log:
        if x.startswith("trace-pattern: X"):
            v = H.num(x.split()[-1])
    return v


def summary_refs(summary: Sequence[str]) -> int:
    n = 0.0
    for x in summary:
        f = x.split()
        if x.startswith("refs node") and len(f) > 6:
            n += H.num(f[4]) + H.num(f[6])
    return int(n)


def guest_row(s: str, ns: float, refs: int, size: int,
              base: float) -> str:
    off = s == "off"
    return fmt_row((s, f"{ns / 1e6:.1f}", str(refs), f"{ns / refs:.1f}",
                    "-" if off else f"{(ns - base) / refs:.1f}", str(size),
                    "-" if off else f"{size / refs:.2f}"))


def main(argv: Sequence[str], root: str) -> int:
    build = H.build_dir(root)
    o = H.parse(argv, values=("--kernel", "--accesses", "--settings"))
    kernel = o.values.get("--kernel") or H.default_kernel(root)
    k = o.values.get("--accesses", "2000000")
    settings = o.values.get("--settings", SETTINGS).split()
    for s in settings:
        setting_opts(s, "")
    work = f"{build}/trace-bench"
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    results = H.results_start(build, root, PROG, kernel, PROG, argv)
    try:
        run(root, build, kernel, k, settings, work, H.Tee(results))
    finally:
        print(f"{PROG}: results: {results}", file=sys.stderr, flush=True)
    return 0


def run(root: str, build: str, kernel: str, k: str, settings: Sequence[str],
        work: str, out: H.Tee) -> None:
    load = " ".join(H.read("/proc/loadavg").split()[:3])
    out(f"# topology four, trace-pattern {k} 0 1, load {load}")
    out(fmt_row(HEADER))
    src = f"{root}/tools/src/trace"
    subprocess.run(["cc", "-O2", "-D_GNU_SOURCE", f"-I{src}", "-o",
                    f"{work}/trace-encode",
                    f"{root}/tools/testing/trace/trace-encode.c",
                    f"{src}/trace-write.c", f"{src}/trace-io.c", "-lzstd",
                    "-lz"], check=True)
    out("# the writer alone, on the host: 20M references; ns/ref is CPU "
        "time (wall time in extra_ns/ref's place)")
    for c in ("none", "zstd", "gzip"):
        r = subprocess.run([f"{work}/trace-encode", str(HOST_REFS), c,
                            f"{work}/enc"], stdout=subprocess.PIPE,
                           text=True, check=True)
        cpu_ns, wall = (r.stdout.split() + ["", ""])[:2]
        files = glob.glob(f"{work}/enc*")
        size = sum(os.path.getsize(f) for f in files)
        for f in files:
            os.unlink(f)
        out(host_row(c, cpu_ns, wall, size))
    out("# in the guest: trace-pattern's window")
    base: Optional[float] = None
    for s in settings:
        got = guest(root, build, kernel, k, s, f"{work}/{s}")
        if got is None:
            continue
        ns, refs, size = got
        base = ns if base is None else base
        if refs == 0:
            print(f"{PROG}: {s}: no references in the truth's summary",
                  file=sys.stderr)
            continue
        out(guest_row(s, ns, refs, size, base))
    out("# MB/Mref: bytes per reference = MB per million references; "
        "extra_ns/ref against 'off'")


def guest(root: str, build: str, kernel: str, k: str, s: str,
          d: str) -> Optional[Tuple[float, int, int]]:
    """One setting's boot: the window's ns, its references, the traces'
    bytes; None if the guest failed."""
    os.makedirs(d, exist_ok=True)
    cmd = [H.refcnt_vm(root), "--kernel", kernel, "--topology", "four",
           "--quiet", "--no-debug", "--log", f"{d}/log", "--truth",
           f"{d}/truth.csv", "--truth-window", *setting_opts(s, f"{d}/t"),
           "--file", f"{build}/truth/trace-pattern:/refcnt/trace-pattern",
           "--", "/refcnt/trace-pattern", k, "0", "1"]
    # A loaded host sometimes fails TCG's early timer check: a second try.
    for _ in range(2):
        rc = H.call(cmd, out=f"{d}/out", err=f"{d}/err")
        if rc == 0:
            break
    if rc != 0:
        print(f"{PROG}: {s}: the guest run failed: "
              + "\n".join(H.tail(f"{d}/err", 3)), file=sys.stderr)
        return None
    size = sum(os.path.getsize(f) for f in glob.glob(f"{d}/t.*"))
    return (window_ns(H.lines(f"{d}/log")),
            summary_refs(H.lines(f"{d}/truth.csv.summary")), size)


def entry(argv: Sequence[str], root: str) -> int:
    return H.entry(PROG, main, argv, root, USAGE)
