# SPDX-License-Identifier: GPL-2.0
"""The small entry points of tools/testing/ that are only argument parsing
around a module of the package."""
from __future__ import annotations

import argparse
import sys
from typing import List, Sequence

from . import tap

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
