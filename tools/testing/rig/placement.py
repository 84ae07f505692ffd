# SPDX-License-Identifier: GPL-2.0
"""refcnt-placement (make placement): the one boot of the Debian guest
that runs placement/placement-guest, and the table placement-score makes
of its log and the truth's series (see USAGE)."""
from __future__ import annotations

import os
import re
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
redis-server under redis-benchmark, stress-ng's STREAM, NUMA and VM
stressors) and on
examples/placement-workloads.c, scored by the truth.  A benchmark: it
asserts nothing.  It takes no arguments.

One boot of the Debian guest (refcnt-vm --debian: the programs need their
shared libraries) with HMAT, on QEMU's instruction clock by default
(refcnt-vm --icount SHIFT: virtual time advances 2^SHIFT ns per guest
instruction, so that NUMA balancing's scans, DAMON's intervals and
refcntd's timers see as many instructions per second as on hardware).
Icount costs: QEMU runs every vCPU round-robin on one host thread (no
MTTCG), so k busy vCPUs would each run at 1/k of 10^9 / 2^SHIFT
instructions per virtual second.  The topology is tiered (nodes 0 and 1:
CPU and 512M each; node 2: 256M, no CPU, a lower memory tier); on 6.1,
which cannot bring up a second CPU on the instruction clock (refcnt-vm
--icount), it is 512M/1,256M/0 (node 0: the CPU and 512M; node 1: 256M,
no CPU), and the workloads that need two nodes with CPUs (phase, shared)
are not run.  REFCNT_PLACEMENT_ICOUNT=off runs at wall-clock time, where
a TCG vCPU does 50-100x fewer instructions per second than hardware and
time-driven mechanisms look that much stronger.  The boot
has the truth plugin with its LLC model and its series, and the hub
device at period 64.  tools/testing/placement/placement-guest runs every
workload, misplaced (its memory bound to the CPU-less node away from its
threads on node 0, then unbound) and naturally placed, under every mode:

  none           no migration (numa_balancing=0): first touch
  nb1            NUMA balancing (numa_balancing=1)
  nb2            memory tiering (numa_balancing=2): promotion from the
                 lower tier HMAT makes of the CPU-less node
  damon          DAMON's migrate_hot over the CPU-less node's memory to
                 node 0, its access pattern set whole (see placement-guest)
  interleave     numactl --interleave=all (natural placement only)
  refcntd-fault  refcntd on the page-fault feed and its soft-dirty scan
  refcntd-pebs   refcntd on the hub device's emulated PMU: PEBS's
  refcntd-ibs    load-latency event at 1,000, IBS (memory-side) at 1,008
  refcntd-hub    refcntd on the hub feed at period 64: the best case
  feed-pebs      the feeds of refcntd-pebs, refcntd-ibs and refcntd-hub
  feed-ibs       counting, no refcntd: the program's figure against
  feed-hub       none's is the feed's cost, against refcntd's refcntd's

and every row (workload, variant, mode) REFCNT_PLACEMENT_REPEATS times
(default 3; the guest goes over all rows once per repeat).  Time-bound
runs (stress-ng, ours) last REFCNT_PLACEMENT_SECONDS of the
guest's clock: under icount, virtual seconds, each 10^9 / 2^SHIFT
instructions of the machine, most of them the program's (the default,
5 x 2^SHIFT s, is 5 x 10^9 instructions, above the 2 x 10^9 a run needs
to reach steady state), and each costs the host as long as TCG takes to
run them with the truth plugin: many times a wall-clock second.  hpcc and
redis are work-bound: their problem sizes set their lengths.

NUMA balancing's scanner runs every 100 ms in every mode.  Each run is a
window of the truth; tools/testing/placement/placement-score turns the
series into the table: per row, the median over its repeats of each
figure and, after "+-", its spread (half the range, (max - min) / 2;
remote share of LLC-model misses over the run and over time, time to 90%
of the final locality, pages migrated and moved twice, projected memory
latency and speedup over first touch from the guest's distance table,
each program's own figure), and for each refcntd row a verdict against
nb1 on the remote share: "better" or "worse" only when the medians
differ by more than the two spreads together, else "same".  Then the
goals, printed, never asserted (the exit status does not depend on
them).  The table goes to stdout and to the run's results file,
build/results/placement-<UTC time>.txt (with its .json: every repeat's
figures too).  A row whose program gave no figure (it failed, or is not
in the guest) is in the table as not run, with the program's last line.

Environment: REFCNT_PLACEMENT_ICOUNT (the shift, 0-10, default 0; off:
wall clock), REFCNT_PLACEMENT_REPEATS (default 3),
REFCNT_PLACEMENT_SECONDS (per time-bound run, default 5 x 2^SHIFT under
icount, 20 at wall-clock time), REFCNT_PLACEMENT_KERNEL (default the
newest of refcnt-setup kernels), REFCNT_PLACEMENT_WORKLOADS,
REFCNT_PLACEMENT_VARIANTS, REFCNT_PLACEMENT_MODES (subsets of the
defaults), REFCNT_PLACEMENT_NATURAL_MODES (the natural variant's modes,
default all), REFCNT_PLACEMENT_DIR (the boot's files, default
build/placement: boots in parallel each need their own),
REFCNT_PLACEMENT_REPORT=1 (no boot: score REFCNT_PLACEMENT_DIR again,
which may then name several boots' directories, space-separated, for one
table: a row's repeats are its runs in all of them; the table's head takes
the other settings as given).
"""

WORKLOADS = ("hpcc redis stressng-stream stressng-numa stressng-vm misplaced "
             "phase shared tier")
VARIANTS = "misplaced natural"
MODES = ("none nb1 nb2 damon interleave refcntd-fault refcntd-pebs "
         "refcntd-ibs refcntd-hub feed-pebs feed-ibs feed-hub")
PKGS = "hpcc stress-ng redis-server redis-tools numactl"
HUB_PERIOD = 64
# The clock: QEMU's instruction clock at this shift (refcnt-vm --icount),
# or "off" for wall-clock time.  The tiered preset, but under icount on
# 6.1, which hangs bringing up a second CPU there (rig/vm.py): one CPU,
# node 0 with the CPU and node 1 the CPU-less lower tier.
ICOUNT = "0"
TOPOLOGY = "tiered"
ICOUNT_TOPOLOGY = "512M/1,256M/0"
REPEATS = 3
# A time-bound run's default length under icount, in instructions of the
# whole machine: the program's threads on node 0's vCPU get most of
# them (an idle vCPU takes no turns), so at least the 2 x 10^9.
INSNS_PER_RUN = 5 * 10**9
# The guest's timeout: per run, the work-bound programs' allowance (hpcc
# takes minutes) plus, under icount, the virtual seconds at a host rate
# of TCG with the truth plugin that is an assumed floor, not a measure.
RUN_HOST_SECS = 300
HOST_IPS = 10**7
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
    icount: str = ICOUNT
    repeats: int = REPEATS

    @staticmethod
    def from_env(env: Mapping[str, str]) -> "Config":
        # ${VAR:-default}: an empty one is the default.
        modes = env.get("REFCNT_PLACEMENT_MODES") or MODES
        icount = env.get("REFCNT_PLACEMENT_ICOUNT") or ICOUNT
        if icount != "off" and not re.fullmatch("[0-9]|10", icount):
            raise H.Die(f"REFCNT_PLACEMENT_ICOUNT: '{icount}' is not a shift "
                        "from 0 to 10 or 'off'", 2)
        repeats = env.get("REFCNT_PLACEMENT_REPEATS") or str(REPEATS)
        if not re.fullmatch("[1-9][0-9]*", repeats):
            raise H.Die(f"REFCNT_PLACEMENT_REPEATS: '{repeats}' is not a "
                        "positive number", 2)
        secs = env.get("REFCNT_PLACEMENT_SECONDS") or default_secs(icount)
        if not re.fullmatch("[1-9][0-9]*", secs):
            raise H.Die(f"REFCNT_PLACEMENT_SECONDS: '{secs}' is not a "
                        "positive number of seconds", 2)
        return Config(secs, env.get("REFCNT_PLACEMENT_WORKLOADS") or WORKLOADS,
                      env.get("REFCNT_PLACEMENT_VARIANTS") or VARIANTS, modes,
                      env.get("REFCNT_PLACEMENT_NATURAL_MODES") or modes,
                      (env.get("REFCNT_PLACEMENT_REPORT") or "0") == "1",
                      icount, int(repeats))

    def runs(self) -> int:
        """Runs of the guest at most: every row, every repeat."""
        return len(self.workloads.split()) * len(self.variants.split()) * \
            len(self.modes.split()) * self.repeats

    def topology(self, kver: str) -> str:
        if self.icount != "off" and re.match(r"6\.1\.", kver):
            return ICOUNT_TOPOLOGY
        return TOPOLOGY

    def clock(self) -> str:
        """The clock the runs are timed by, as the table's head says it."""
        if self.icount == "off":
            return "wall clock (TCG, MTTCG)"
        return (f"icount shift {self.icount} (virtual time, "
                f"{1 << int(self.icount)} ns per instruction)")

    def timeout(self) -> int:
        """refcnt-vm's --timeout, host seconds: the boot, and per run the
        work-bound programs' allowance and, under icount, the host time
        of the run's virtual seconds at HOST_IPS."""
        per = RUN_HOST_SECS
        if self.icount != "off":
            per += int(self.secs) * 10**9 // (1 << int(self.icount)) // \
                HOST_IPS
        return self.runs() * per + 900

    def guest_env(self) -> str:
        """placement-guest's settings (placement/env)."""
        return (f'SECS={self.secs}\nWORKLOADS="{self.workloads}"\n'
                f'VARIANTS="{self.variants}"\nMODES="{self.modes}"\n'
                f'NATURAL_MODES="{self.natural_modes}"\n'
                f'REPEATS={self.repeats}\n')

    def command(self) -> List[str]:
        """The settings, as the results file's command line has them."""
        return [f"REFCNT_PLACEMENT_SECONDS={self.secs}",
                f"REFCNT_PLACEMENT_WORKLOADS='{self.workloads}'",
                f"REFCNT_PLACEMENT_VARIANTS='{self.variants}'",
                f"REFCNT_PLACEMENT_MODES='{self.modes}'",
                f"REFCNT_PLACEMENT_NATURAL_MODES='{self.natural_modes}'",
                f"REFCNT_PLACEMENT_ICOUNT={self.icount}",
                f"REFCNT_PLACEMENT_REPEATS={self.repeats}"]


def default_secs(icount: str) -> str:
    """REFCNT_PLACEMENT_SECONDS' default: under icount, long enough for
    INSNS_PER_RUN instructions of the machine at 10^9 / 2^shift per
    virtual second."""
    if icount == "off":
        return "20"
    per_sec = 10**9 // (1 << int(icount))
    return str(-(-INSNS_PER_RUN // per_sec))


def vm_cmd(root: str, build: str, kver: str, c: Config,
           out: str) -> List[str]:
    """refcnt-vm's command line, the boot's files in OUT."""
    clock = [] if c.icount == "off" else ["--icount", c.icount]
    return [H.refcnt_vm(root), "--kernel", kver, "--topology",
            c.topology(kver),
            "--hmat"] + clock + [
            "--no-debug", "--debian-pkgs", PKGS,
            "--module", f"{build}/{kver}/refcnt.ko",
            "--file", f"{build}/tools:/refcnt/tools",
            "--file", f"{out}/guest:/refcnt/placement",
            "--truth", f"{out}/truth.csv", "--truth-window",
            "--truth-llc", "1M", "--truth-series", f"{out}/series.txt",
            f"--hub={HUB_PERIOD}", "--timeout", str(c.timeout()),
            "--log", f"{out}/serial.log", "--quiet",
            "--", "bash /refcnt/placement/placement-guest"]


def header(serial: Sequence[str], c: Config, kver: str) -> List[str]:
    """The table's head: the machine, and the guest's lines that say
    what it was (kept as the serial log has them)."""
    if c.topology(kver) == TOPOLOGY:
        lines = ["# tiered with HMAT: nodes 0-1 512M and a CPU each, node 2 "
                 "256M and no CPU;",
                 "# threads on node 0; misplaced = memory bound to node 2, "
                 "then unbound"]
    else:
        lines = [f"# {ICOUNT_TOPOLOGY} with HMAT (one vCPU: icount on 6.1): node 0 "
                 "512M and the CPU, node 1 256M and no CPU;",
                 "# threads on node 0; misplaced = memory bound to node 1, "
                 "then unbound"]
    lines += ["# " + ln for ln in serial
              if ln.split(" ")[0] in ("machine", "distance", "tier") and
              " " in ln]
    return lines + [
        f"# hub period {HUB_PERIOD}; LLC model 1 MiB, 16 ways, per node; "
        "latency model: local",
        "# 80 ns, another node 80 ns x distance / 10; "
        f"{c.secs}s per time-bound run, {c.repeats} repeats of each row;",
        f"# clock: {c.clock()}",
        ""]


def out_dirs(env: Mapping[str, str], build: str, report: bool) -> List[str]:
    """REFCNT_PLACEMENT_DIR as absolute paths: the boot's directory
    (default build/placement), or with REFCNT_PLACEMENT_REPORT=1 the
    boots' directories to score as one table."""
    dirs = (env.get("REFCNT_PLACEMENT_DIR") or f"{build}/placement").split()
    if not dirs or (len(dirs) > 1 and not report):
        raise H.Die("REFCNT_PLACEMENT_DIR: a boot writes one directory "
                    "(several are scored together with "
                    "REFCNT_PLACEMENT_REPORT=1)", 2)
    return [os.path.abspath(d) for d in dirs]


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


def boot(root: str, build: str, kver: str, c: Config, out: str) -> None:
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
    step(f"the Debian guest ({PKGS}): {c.runs()} runs of about {c.secs}s "
         f"({c.clock()}), {kver}, {c.topology(kver)} with HMAT, truth and hub")
    if H.call(vm_cmd(root, build, kver, c, out), both=f"{out}/guest.log",
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
    c = Config.from_env(os.environ)
    outs = out_dirs(os.environ, build, c.report)
    try:
        kver = os.environ.get("REFCNT_PLACEMENT_KERNEL") or \
            newest_kernel(root)
        if not c.report:
            boot(root, build, kver, c, outs[0])
        for out in outs:
            if not os.path.isfile(f"{out}/series.txt") or \
                    os.path.getsize(f"{out}/series.txt") == 0:
                raise H.Die(f"no truth series in {out} (the guest did not "
                            "finish)", 1)
        results = H.results_start(build, root, "placement", kver, PROG,
                                  c.command())
        tee = H.Tee(results)
        for ln in header(raw_lines(f"{outs[0]}/serial.log"), c, kver):
            tee(ln)
        sys.stdout.flush()
        pairs = [f for out in outs
                 for f in (f"{out}/serial.log", f"{out}/series.txt")]
        r = subprocess.run(["python3", f"{root}/tools/testing/placement/"
                            "placement-score", "--json",
                            results[:-len(".txt")] + ".json"] + pairs,
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
