# SPDX-License-Identifier: GPL-2.0
"""refcnt-placement (make placement): the one boot of the Debian guest
that runs placement/placement-guest, and the table placement-score makes
of its log and the truth's series (see USAGE)."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from typing import List, Mapping, Sequence

from . import hostcmd as H

PROG = "refcnt-placement"

USAGE = """\
refcnt-placement (make placement): refcntd against the kernel's own
placement, on programs nobody here wrote (hpcc's STREAM and RandomAccess,
redis-server under redis-benchmark, likwid-bench's copy with its streams
on another memory domain, stress-ng's NUMA and VM stressors) and on
examples/placement-workloads.c, scored by the truth.  A benchmark: it
asserts nothing.  It takes no arguments.

One boot of the Debian guest (refcnt-vm --debian: the programs need their
shared libraries) on the tiered topology with HMAT (nodes 0 and 1: CPU and
512M each; node 2: 256M, no CPU, a lower memory tier), the truth plugin
with its LLC model and its series, and the hub device at period 64.
tools/testing/placement/placement-guest runs every workload, misplaced
(its memory bound to the CPU-less node away from its threads on node 0,
then unbound) and naturally placed, under every mode:

  none           no migration (numa_balancing=0): first touch
  nb1            NUMA balancing (numa_balancing=1)
  nb2            memory tiering (numa_balancing=2): promotion from the
                 lower tier HMAT makes of node 2
  damon          DAMON's migrate_hot over node 2's memory to node 0, its
                 access pattern set whole (see placement-guest)
  interleave     numactl --interleave=all (natural placement only)
  refcntd-fault  refcntd on the page-fault feed and its soft-dirty scan
  refcntd-pebs   refcntd on the hub device's emulated PMU: PEBS's
  refcntd-ibs    load-latency event at 1,000, IBS (memory-side) at 1,008
  refcntd-hub    refcntd on the hub feed at period 64: the best case

NUMA balancing's scanner runs every 100 ms in every mode.  Each run is a
window of the truth; tools/testing/placement/placement-score turns the
series into the table (remote share of LLC-model misses over the run and
over time, time to 90% of the final locality, pages migrated and moved
twice, projected memory latency and speedup over first touch from the
guest's distance table, each program's own figure) and the goals.  The
table goes to stdout and to the run's results file,
build/results/placement-<UTC time>.txt (with its .json).  A run whose
program gave no figure (it failed, or is not in the guest) is in the
table as not run, with the program's last line.

Environment: REFCNT_PLACEMENT_SECONDS (per time-bound run, default 20),
REFCNT_PLACEMENT_KERNEL (default the newest of refcnt-setup kernels),
REFCNT_PLACEMENT_WORKLOADS, REFCNT_PLACEMENT_VARIANTS,
REFCNT_PLACEMENT_MODES (subsets of the defaults),
REFCNT_PLACEMENT_NATURAL_MODES (the natural variant's modes, default all),
REFCNT_PLACEMENT_REPORT=1 (no boot: score build/placement/ again).
"""

WORKLOADS = ("hpcc redis likwid stressng-numa stressng-vm misplaced phase "
             "shared tier")
VARIANTS = "misplaced natural"
MODES = ("none nb1 nb2 damon interleave refcntd-fault refcntd-pebs "
         "refcntd-ibs refcntd-hub")
PKGS = "hpcc stress-ng redis-server redis-tools likwid numactl"
HUB_PERIOD = 64
# What the guest gets beside placement-watch, from the placement
# directory (hub-pmu comes from the build).
GUEST_FILES = ("placement-guest", "refcntd-fault.conf", "refcntd-hub.conf",
               "refcntd-pmu.conf", "hpccinf.txt", "hpccmemf.txt")

T0 = time.monotonic()


@dataclass
class Config:
    secs: str
    workloads: str
    variants: str
    modes: str
    natural_modes: str
    report: bool

    @staticmethod
    def from_env(env: Mapping[str, str]) -> "Config":
        # ${VAR:-default}: an empty one is the default.
        modes = env.get("REFCNT_PLACEMENT_MODES") or MODES
        return Config(env.get("REFCNT_PLACEMENT_SECONDS") or "20",
                      env.get("REFCNT_PLACEMENT_WORKLOADS") or WORKLOADS,
                      env.get("REFCNT_PLACEMENT_VARIANTS") or VARIANTS, modes,
                      env.get("REFCNT_PLACEMENT_NATURAL_MODES") or modes,
                      (env.get("REFCNT_PLACEMENT_REPORT") or "0") == "1")

    def runs(self) -> int:
        return len(self.workloads.split()) * len(self.variants.split()) * \
            len(self.modes.split())

    def guest_env(self) -> str:
        """placement-guest's settings (placement/env)."""
        return (f'SECS={self.secs}\nWORKLOADS="{self.workloads}"\n'
                f'VARIANTS="{self.variants}"\nMODES="{self.modes}"\n'
                f'NATURAL_MODES="{self.natural_modes}"\n')

    def command(self) -> List[str]:
        """The settings, as the results file's command line has them."""
        return [f"REFCNT_PLACEMENT_SECONDS={self.secs}",
                f"REFCNT_PLACEMENT_WORKLOADS='{self.workloads}'",
                f"REFCNT_PLACEMENT_VARIANTS='{self.variants}'",
                f"REFCNT_PLACEMENT_MODES='{self.modes}'",
                f"REFCNT_PLACEMENT_NATURAL_MODES='{self.natural_modes}'"]


def vm_cmd(root: str, build: str, kver: str, c: Config) -> List[str]:
    """refcnt-vm's command line."""
    out = f"{build}/placement"
    return [H.refcnt_vm(root), "--kernel", kver, "--topology", "tiered",
            "--hmat", "--no-debug", "--debian-pkgs", PKGS,
            "--module", f"{build}/{kver}/refcnt.ko",
            "--file", f"{build}/tools:/refcnt/tools",
            "--file", f"{out}/guest:/refcnt/placement",
            "--truth", f"{out}/truth.csv", "--truth-window",
            "--truth-llc", "1M", "--truth-series", f"{out}/series.txt",
            f"--hub={HUB_PERIOD}", "--timeout", str(c.runs() * 300 + 900),
            "--log", f"{out}/serial.log", "--quiet",
            "--", "bash /refcnt/placement/placement-guest"]


def header(serial: Sequence[str], c: Config) -> List[str]:
    """The table's head: the machine, and the guest's lines that say
    what it was (kept as the serial log has them)."""
    lines = ["# tiered with HMAT: nodes 0-1 512M and a CPU each, node 2 256M "
             "and no CPU;",
             "# threads on node 0; misplaced = memory bound to node 2, then "
             "unbound"]
    lines += ["# " + ln for ln in serial
              if ln.split(" ")[0] in ("machine", "distance", "tier") and
              " " in ln]
    return lines + [
        f"# hub period {HUB_PERIOD}; LLC model 1 MiB, 16 ways, per node; "
        "latency model: local",
        "# 80 ns, another node 80 ns x distance / 10; "
        f"{c.secs}s per time-bound run; TCG",
        ""]


def step(text: str) -> None:
    print(f"==> [{int(time.monotonic() - T0)}s] {text}", file=sys.stderr,
          flush=True)


def raw_lines(path: str) -> List[str]:
    """PATH's lines as grep sees them (a carriage return stays)."""
    try:
        with open(path, "rb") as f:
            text = f.read().decode(errors="replace")
    except OSError:
        return []
    return text.split("\n")[:-1] if text.endswith("\n") else text.split("\n")


class Failed(Exception):
    """A step failed: exit with its status, as the script's set -e."""

    def __init__(self, status: int) -> None:
        super().__init__(status)
        self.status = status


def run(cmd: Sequence[str], cwd: str, quiet_err: bool = False) -> None:
    sys.stdout.flush()
    rc = subprocess.call(cmd, cwd=cwd, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL if quiet_err else None)
    if rc != 0:
        raise Failed(rc)


def newest_kernel(root: str) -> str:
    """The last line of refcnt-setup kernels."""
    r = subprocess.run([f"{root}/tools/testing/refcnt-setup", "kernels"],
                       stdout=subprocess.PIPE, text=True, cwd=root)
    if r.returncode != 0:
        raise Failed(r.returncode)
    lines = r.stdout.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return lines[-1] if lines else ""


def boot(root: str, build: str, kver: str, c: Config) -> None:
    out = f"{build}/placement"
    p = f"{root}/tools/testing/placement"
    step(f"building refcnt.ko for {kver}, the tools and the truth plugin")
    run(["make", "--no-print-directory", "module", f"KVER={kver}"], root)
    run(["make", "--no-print-directory", "tools", "truth"], root, True)
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(f"{out}/guest")
    sys.stdout.flush()
    rc = subprocess.call(["cc", "-O2", "-Wall", "-static", "-o",
                          f"{out}/guest/placement-watch",
                          f"{p}/placement-watch.c"], cwd=root)
    if rc != 0:
        raise Failed(rc)
    for f in [f"{build}/truth/hub-pmu"] + [f"{p}/{g}" for g in GUEST_FILES]:
        try:
            shutil.copy(f, f"{out}/guest/")
        except OSError as x:
            print(f"cp: {f}: {x.strerror}", file=sys.stderr)
            raise Failed(1)
    with open(f"{out}/guest/env", "w") as e:
        e.write(c.guest_env())
    step(f"the Debian guest ({PKGS}): {c.runs()} runs of about {c.secs}s, "
         f"{kver}, tiered with HMAT, truth and hub")
    if H.call(vm_cmd(root, build, kver, c), both=f"{out}/guest.log",
              cwd=root) != 0:
        step(f"the guest failed, see {out}/guest.log and {out}/serial.log "
             "(what ran is scored)")


def main(argv: Sequence[str], root: str) -> int:
    if argv[:1] in (["-h"], ["--help"]):
        raise H.Help()
    if argv:
        raise H.Die(f"unknown argument '{argv[0]}' (it takes none; see "
                    "--help)", 2)
    build = H.build_dir(root)
    out = f"{build}/placement"
    c = Config.from_env(os.environ)
    try:
        kver = os.environ.get("REFCNT_PLACEMENT_KERNEL") or \
            newest_kernel(root)
        if not c.report:
            boot(root, build, kver, c)
        if not os.path.isfile(f"{out}/series.txt") or \
                os.path.getsize(f"{out}/series.txt") == 0:
            raise H.Die(f"no truth series in {out} (the guest did not "
                        "finish)", 1)
        results = H.results_start(build, root, "placement", kver, PROG,
                                  c.command())
        tee = H.Tee(results)
        for ln in header(raw_lines(f"{out}/serial.log"), c):
            tee(ln)
        sys.stdout.flush()
        r = subprocess.run(["python3", f"{root}/tools/testing/placement/"
                            "placement-score", "--json",
                            results[:-len(".txt")] + ".json",
                            f"{out}/serial.log", f"{out}/series.txt"],
                           stdout=subprocess.PIPE, cwd=root)
        sys.stdout.buffer.write(r.stdout)
        sys.stdout.flush()
        with open(results, "ab") as f:
            f.write(r.stdout)
        if r.returncode != 0:
            raise Failed(r.returncode)
    except Failed as e:
        return e.status
    step(f"results: {results}")
    return 0


def entry(argv: Sequence[str], root: str) -> int:
    return H.entry(PROG, main, argv, root, USAGE, 1)
