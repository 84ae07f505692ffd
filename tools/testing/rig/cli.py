# SPDX-License-Identifier: GPL-2.0
"""The small entry points of tools/testing/ that are only argument parsing
around a module of the package."""
from __future__ import annotations

import argparse
import sys
from typing import List, Sequence

from . import debugkernel, tap

TAP_SUMMARY_EPILOG = """\
Counts the TAP results in each FILE (a guest serial log or any TAP stream;
'-' is stdin) and prints, per file and then in total:
  FILE: P passed, F failed, S skipped
  P passed, F failed, S skipped

What counts: lines starting (at column 0) with "ok N ..." (passed; with
"# SKIP" skipped), "not ok N ..." (failed; with "# TODO" or "# SKIP" not a
failure: TODO counts as skipped) and "Bail out!" (failed).  Indented or
"#"-prefixed lines (nested subtests, diagnostics) and kernel log lines are
not counted: a nested result is summed up by its parent line.  A TAP stream
whose plan "1..N" announces more results than it gave (the program died)
counts one more failure; so does a plan given after its results (at the
end, as TAP allows) that counts more than were given.  Carriage returns
are ignored.

Exit status: 0 if nothing failed, 1 if something failed, 2 on usage error.
"""


def tap_summary(argv: Sequence[str]) -> int:
    ap = argparse.ArgumentParser(
        prog="tap-summary", epilog=TAP_SUMMARY_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Count the TAP results of test logs.")
    ap.add_argument("--counts", action="store_true",
                    help='print only "P F S" for all FILEs together')
    ap.add_argument("--failures", action="store_true",
                    help="also list each failed test line, with the lines "
                    "the test printed before it, to stderr")
    ap.add_argument("files", nargs="+", metavar="FILE")
    args = ap.parse_args(argv)
    streams: List[tap.Stream] = []
    for name in args.files:
        try:
            if name == "-":
                streams.append(tap.parse(sys.stdin.read().split("\n"), "-"))
            else:
                streams.append(tap.parse_file(name))
        except OSError as e:
            print(f"tap-summary: cannot read {name}: {e.strerror}",
                  file=sys.stderr)
            return 2
    if args.failures:
        for s in streams:
            for f in s.failures:
                print(f"{s.name}: {f.what}", file=sys.stderr)
                for c in f.context:
                    print(f"    {c}", file=sys.stderr)
    t = tap.total(streams)
    if args.counts:
        print(t.passed, t.failed, t.skipped)
    else:
        if len(streams) > 1:
            for s in streams:
                print(f"{s.name}: {s.counts.line()}")
        print(t.line())
    return 1 if t.failed else 0


DEBUG_KERNEL_EPILOG = """\
Commands:
  build     build the kernel unless it is cached, then print its build
            directory (the KDIR external modules build against; bzImage,
            the image to boot, and include/config/kernel.release are in
            it).  Progress and the compiler's output go to stderr.
  dir       print the build directory if the kernel is built, else exit 1
  release   print the built kernel's release (e.g. 6.1.192-refcnt-debug),
            or exit 1 if it is not built
  key       print the cache key

The build runs under nice 19: make check starts it in the background, so
it takes only what the guest runs leave idle.  Building needs flex, bison,
bc, libelf-dev and linux-source-6.1 (linux-source-6.12 for pmu-6.12;
tools/testing/refcnt-setup deps).
Old builds of the same variant are deleted when a new key is built.
"""


def debug_kernel(argv: Sequence[str], root: str) -> int:
    ap = argparse.ArgumentParser(
        prog=debugkernel.PROG, epilog=DEBUG_KERNEL_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="The guest kernel with lockdep, KASAN, kmemleak and "
        "debug objects that make check runs part of the suite on.")
    ap.add_argument("--variant", default="debug",
                    help="the checkers: tools/testing/debug-kernel/"
                    "NAME.config, added to guest.config (default debug: "
                    "lockdep, KASAN, kmemleak, debug objects; kcsan: KCSAN, "
                    "which cannot go with KASAN; pmu-6.12: 6.12 for the "
                    "test PMU, no checkers)")
    ap.add_argument("--jobs", type=int, default=None,
                    help="make -j N (default: the number of CPUs)")
    ap.add_argument("command", choices=("build", "dir", "release", "key"))
    args = ap.parse_args(argv)
    try:
        if args.jobs is not None and args.jobs < 1:
            raise debugkernel.BuildError(
                f"--jobs: '{args.jobs}' is not a positive number")
        k = debugkernel.DebugKernel(root, args.variant, args.jobs)
        if args.command == "key":
            print(k.key())
            return 0
        if args.command == "build":
            print(k.build())
            return 0
        d = k.built_dir()
        if d is None:
            return 1
        print(d if args.command == "dir" else debugkernel.release(d))
        return 0
    except debugkernel.BuildError as e:
        print(f"{debugkernel.PROG}: error: {e}", file=sys.stderr)
        return 1
