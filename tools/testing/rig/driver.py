# SPDX-License-Identifier: GPL-2.0
"""refcnt-check, the driver behind make check and make check-long: its
options, the kernels, the plan's execution and the summary."""
from __future__ import annotations

import argparse
import glob
import os
import signal
import sys
import time
from typing import Dict, List, NoReturn, Optional, Sequence

from . import kernels as K
from .check import GUEST_TIMEOUT, Check, Config, plan
from .execute import Execution
from .run import Runner
from .suite import BUDGET_S, Step, budget_report, order, schedule, select

DESCRIPTION = """\
The driver behind `make check` (and `make check-long`: --long).  What it
runs, in order (Documentation/testing.rst, "make check", has the why and
the durations; --plan prints the steps):
  1. tools/testing/refcnt-setup deps (needs root unless everything is
     installed; skipped with --no-deps)
  2. the debug kernel (tools/testing/refcnt-debug-kernel build), in the
     background unless it is cached; log build/logs/debug-kernel.log;
     and the fleet tests' Debian root (fleet-check --root-only) and the
     packages' clean chroot (deb/deb-chroot --prepare) under nice 10, logs
     build/logs/debian-root.log and deb-chroot-prepare.log
  3. host steps: the module for each Debian kernel (W=1, sparse; warnings
     fail), selftests, tools, pmda, fleet-host, track-check, json-check,
     interval-check, lib-check, core-check, pmu-check, papi, checkpatch,
     kernel-doc, shellcheck, cross-arm64 (module, library and tools
     cross-built for arm64), and
     rig-check (the rig's own unit tests, mypy --strict and flake8)
  4. the selftests in QEMU guests (log build/logs/<kernel>-<topology>.log):
     the first Debian kernel on one (but the stress tests and load
     cycles), four and 72 (the tests whose subject changes above 64
     nodes), the second on four, all with the short variants; per
     kernel, hotplug_test in the 'hotplug' topology with a dimm offline
     at boot (log <kernel>-hotplug-memhp.log)
  5. the truth plugin's tests and refcnt-compare's; the trace analyses'
  6. the hub device's tests on four (first kernel), the PAPI component's
     guest tests first in the same boot; refcntd_pmu_test again with the
     device at period 64 (make placement's)
  7. the fleet tests in the Debian guest on the second kernel
  8. refcnt-run's object reports on the first kernel
  9. make demo, as the README has it
 10. the Debian packages (tools/testing/deb/deb-check --no-guest): make
     deb, lintian, the symbols file, DKMS on the host for the second
     kernel, the build in the clean chroot from the Build-Depends alone
 11. the debug kernel (waiting for its build): the module built against
     it, the selftests on four (check-long: stress_test's injection
     against resets for 90 s), hotplug_test (25 memory cycles), the hub
     tests but the exact windows; any lockdep, KASAN, kmemleak or
     debug-objects report fails the run
--long (make check-long) adds what make check leaves out for time: the
long variants and every selftest on one, four and 72 on both kernels, the
hub tests on 72 nodes and on the second kernel, the PAPI guest tests in
boots of their own, the fleet tests on both kernels, the object reports'
bad input and redis-server, every hub test on the debug kernel, the
KCSAN kernel with the selftests on four, the Debian packages
installed, used, removed and purged in the Debian guest, and an arm64
guest (refcnt-vm --arch arm64) running the cross-built selftests on
Debian's arm64 kernels with a CPU-less memory node.
Each host step is one test; each guest run adds its TAP results.  Ends
with "N passed, N failed, N skipped"; exit status 0 iff nothing failed.

Environment: REFCNT_VM_ACCEL (kvm, tcg, auto), REFCNT_CHECK_GUEST_TIMEOUT
(seconds per guest run, default 1200; twice that on the debug kernel),
REFCNT_BUILD_DIR (default build/).
"""


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    ap = argparse.ArgumentParser(
        prog="refcnt-check", description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-v", "--verbose", action="store_true",
                    help="stream the guest output (default: a summary per "
                    "run, and the failures and the log's end when it fails)")
    ap.add_argument("--long", action="store_true", help="make check-long")
    ap.add_argument("--no-deps", dest="deps", action="store_false",
                    help="do not run tools/testing/refcnt-setup deps")
    ap.add_argument("--kernels", metavar="LIST",
                    help="what to run on: Debian releases and 'debug' "
                    "(default: tools/testing/refcnt-setup kernels, then "
                    "debug)")
    ap.add_argument("--topologies", metavar="LIST",
                    help="the selftests' topologies on every Debian kernel")
    ap.add_argument("--only", metavar="GLOB", action="append", default=[],
                    help="run only the steps whose names match (repeatable; "
                    "--plan lists the names); what they need must have been "
                    "built by an earlier run")
    ap.add_argument("--jobs", type=int, choices=(1, 2), default=2,
                    help="2 (the default): the host checks no guest needs "
                    "run beside the guests once the debug kernel is built; "
                    "1: every step one after the other")
    ap.add_argument("--plan", action="store_true",
                    help="print the steps, what each needs and the planned "
                    "time, and run nothing")
    return ap.parse_args(argv)


def config(args: argparse.Namespace, root: str,
           kernels: Sequence[str]) -> Config:
    timeout = int(os.environ.get("REFCNT_CHECK_GUEST_TIMEOUT",
                                 str(GUEST_TIMEOUT)))
    return Config(root=root,
                  build=os.environ.get("REFCNT_BUILD_DIR",
                                       os.path.join(root, "build")),
                  long=args.long, verbose=args.verbose, deps=args.deps,
                  debian=[k for k in kernels if not K.is_built(k)],
                  debug="debug" in kernels,
                  topologies=(args.topologies or "").split(),
                  guest_timeout=timeout)


def print_plan(c: Check, only: Sequence[str], jobs: int) -> None:
    steps = select(order(plan(c)), only)
    for s in schedule(steps, lanes=jobs):
        step = next(t for t in steps if t.name == s.name)
        needs = f" (needs {', '.join(step.needs)})" if step.needs else ""
        bg = " [background]" if step.background else \
            " [side]" if step.lane == "side" and jobs > 1 else ""
        print(f"{s.start:5d} {s.end:5d}  {s.name}{bg}{needs}")


def finish(runner: Runner, steps: Sequence[Step] = (),
           took: Optional[Dict[str, int]] = None, long: bool = False) -> int:
    res = runner.results
    lines = res.summary()
    counts = lines.pop()
    for line in lines:
        print(line)
    if steps:
        total = int(time.time() - res.t_start)
        # make check's hour is its own: check-long has none.
        for line in budget_report(steps, took or {}, total,
                                  None if long else BUDGET_S):
            print("  " + line)
    print(counts, flush=True)
    return 0 if res.ok else 1


def _terminate(runner: Runner, status: int) -> NoReturn:
    runner.stop_background()
    sys.exit(status)


def main(argv: Sequence[str], root: str) -> int:
    args = parse_args(argv)
    build = os.environ.get("REFCNT_BUILD_DIR", os.path.join(root, "build"))
    runner = Runner(root, os.path.join(build, "logs"), verbose=args.verbose)
    os.makedirs(runner.logs, exist_ok=True)
    signal.signal(signal.SIGTERM, lambda *_: _terminate(runner, 143))
    try:
        return _run(args, root, runner)
    except KeyboardInterrupt:
        _terminate(runner, 130)
    finally:
        runner.stop_background()


def _run(args: argparse.Namespace, root: str, runner: Runner) -> int:
    res = runner.results
    if not args.plan:
        for f in glob.glob(os.path.join(runner.logs, "*.log")) + \
                glob.glob(os.path.join(runner.logs, "*.tap")):
            os.unlink(f)
        res.progress(f"refcnt-check{' --long' if args.long else ''} in {root}"
                     f" ({os.cpu_count()} CPUs)")
    if args.deps and not args.plan and not runner.step(
            "deps", [os.path.join(root, "tools/testing/refcnt-setup"),
                     "deps"]):
        print("refcnt-check: cannot install what the tests need; stopping",
              file=sys.stderr)
        return finish(runner)
    kernels: List[str] = (args.kernels or "").split()
    if not kernels:
        try:
            kernels = K.debian_releases(root) + ["debug"]
        except Exception as e:  # noqa: BLE001 (any failure is reported)
            res.failed("kernels: tools/testing/refcnt-setup kernels "
                       f"failed: {e}")
            return finish(runner)
    c = Check(config(args, root, kernels), runner)
    if args.plan:
        print_plan(c, args.only, args.jobs)
        return 0
    res.progress(f"kernels: {' '.join(kernels)}")
    steps = select(order(plan(c)), args.only)
    took = Execution(steps, args.jobs, lambda: runner.background_done(
        "debug-kernel")).run()
    return finish(runner, steps, took, args.long)
