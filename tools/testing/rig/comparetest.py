# SPDX-License-Identifier: GPL-2.0
"""compare-test: refcnt-compare's figures on small hand-made table/truth
pairs (tools/testing/truth/compare-data/), as TAP.  Every expected value
was worked out by hand; the derivation is in compare-data/README."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from typing import List, Optional, Sequence, Tuple, Union

from .tapout import Writer

PROG = "compare-test"

# refcnt-compare's options and files by name: "@D/x" is compare-data's x,
# "@W/x" the work directory's.
REGIONS = ["-r", "@D/regions", "@D/tables.csv", "@D/truth.csv"]


@dataclass(frozen=True)
class Expect:
    """NAME passes when the output of refcnt-compare ARGS (stdout and
    stderr) contains every one of WANT."""
    name: str
    args: Tuple[str, ...]
    want: Tuple[str, ...]


@dataclass(frozen=True)
class Fails:
    """NAME passes when refcnt-compare ARGS exits STATUS with exactly one
    line on stderr and nothing on stdout."""
    name: str
    status: int
    args: Tuple[str, ...]


Case = Union[Expect, Fails]

OVERALL = ('"overall": {"refs": 14, "true_refs": 200, "pages": 4, '
           '"true_pages": 4, "coverage": 0.9, "attribution": 0.65, '
           '"remote_share": 0.214286, "true_remote_share": 0.45, '
           '"rank_correlation": 0.8}')
REGION_A = ('{"name": "A", "home": "0", "true_major": "0", "major": "0", '
            '"misplaced": false, "advised": false, "refs": 7, '
            '"true_refs": 150')
REGION_C = ('{"name": "C", "home": "1", "true_major": "1", "major": "1", '
            '"misplaced": false, "advised": false, "refs": 4, '
            '"true_refs": 20, "pages": 1, "true_pages": 1, "coverage": 0, '
            '"attribution": 0')
REGION_B = ('{"name": "B", "home": "1", "true_major": "0", "major": "0", '
            '"misplaced": true, "advised": false')


def _json(*args: str) -> Tuple[str, ...]:
    return ("--json", *args)


CASES: Tuple[Case, ...] = (
    Expect("overall coverage, attribution, remote shares, rank correlation",
           _json(*REGIONS), (OVERALL,)),
    Expect("the pages of any region", _json(*REGIONS),
           ('"in_regions": {"refs": 14, "true_refs": 200, "pages": 4, '
            '"true_pages": 4, "coverage": 0.9',)),
    Expect("hot pages: top 100 and top 1% (k = 1)", _json(*REGIONS),
           ('{"k": 100, "refcnt": 4, "truth": 4, "common": 3, '
            '"precision": 0.75, "recall": 0.75}',
            '{"k": 1, "refcnt": 1, "truth": 1, "common": 1, '
            '"precision": 1, "recall": 1}')),
    Expect("remote share by accessing node", _json(*REGIONS),
           ('{"node": "0", "refs": 8, "true_refs": 120, '
            '"remote_share": 0.25, "true_remote_share": 0.25}',
            '{"node": "1", "refs": 6, "true_refs": 80, '
            '"remote_share": 0.166667, "true_remote_share": 0.75}')),
    Expect("figures per home node", _json(*REGIONS),
           ('{"node": "0", "refs": 7, "true_refs": 150, "pages": 2, '
            '"true_pages": 2, "coverage": 1, "attribution": 0.666667',
            '{"node": "1", "refs": 7, "true_refs": 50, "pages": 2, '
            '"true_pages": 2, "coverage": 0.6, "attribution": 0.6')),
    Expect("figures per region; a page only one side counts",
           _json(*REGIONS), (REGION_A, REGION_C)),
    Expect("misplacement: region B misplaced, too few references to advise",
           _json(*REGIONS),
           (REGION_B,
            '"misplacement": {"regions": 3, "misplaced": 1, "advised": 0, '
            '"both": 0, "precision": null, "recall": 0}')),
    Expect("misplacement with --min-refs 1: advised, precision and recall 1",
           _json("--min-refs", "1", *REGIONS),
           ('"misplacement": {"regions": 3, "misplaced": 1, "advised": 1, '
            '"both": 1, "precision": 1, "recall": 1}',)),
    Expect("the truth against itself scores 100%",
           _json("@D/truth.csv", "@D/truth.csv"),
           ('"coverage": 1, "attribution": 1, "remote_share": 0.45, '
            '"true_remote_share": 0.45, "rank_correlation": 1}',
            '"common": 4, "precision": 1, "recall": 1}')),
    Expect("95% intervals at period 20: pages and regions whose truth is "
           "inside", _json("--period", "20", *REGIONS),
           ('"rank_correlation": 0.8, "interval_pages": 5, '
            '"interval_inside": 4, "interval_coverage": 0.8}',
            '"interval_pages": 2, "interval_inside": 1, '
            '"interval_coverage": 0.5, "inside": false}',
            '"intervals": {"period": 20, "confidence": 0.95, "regions": 3, '
            '"regions_inside": 2, "region_coverage": 0.666667}')),
    Expect("95% intervals at period 1: exact, the truth never equal",
           _json("--period", "1", *REGIONS),
           ('"interval_pages": 5, "interval_inside": 0, '
            '"interval_coverage": 0}',)),
    Expect("95% intervals, text", ("--period", "20", *REGIONS),
           ('95% intervals (period 20): the truth inside for   80.0% of 5 '
            'pages,   80.0% of the regions\' 5, 2 of 3 regions',)),
    Expect("text report", tuple(REGIONS),
           ('overall                    90.0%   65.0%   21.4%   45.0%   '
            '0.800           14          200        4        4',
            'hot pages, top 100: precision   75.0%, recall   75.0% '
            '(3 in common of 4 / 4)',
            'misplaced regions: 1 in truth, 0 advised, 0 both')),
    Fails("a missing file: exit 1, one line", 1,
          ("@D/tables.csv", "@W/none.csv")),
    Fails("not a refcnt-dump table: exit 1, one line", 1,
          ("@D/tables.csv", "@W/bad.csv")),
    Fails("a bad count: exit 1, one line", 1,
          ("@D/tables.csv", "@W/bad2.csv")),
    Fails("one file only: exit 2, one line", 2, ("@D/tables.csv",)),
    Fails("period 0: exit 2, one line", 2,
          ("--period", "0", "@D/tables.csv", "@D/truth.csv")),
    Fails("an unknown option: exit 2", 2,
          ("--bogus", "@D/tables.csv", "@D/truth.csv")),
)

# Inputs refcnt-compare must refuse, written into the work directory.
BAD_INPUTS = {
    "bad.csv": "a,b,c\n1,2,3\n",
    "bad2.csv": "set,paddr,node,cnodeid,refs,n0,n1,lost\n"
                "0,0x1000,0,0,5,x,0,0\n",
}


def lines(text: str) -> List[str]:
    """TEXT's lines as sed reads them: a last line without newline too."""
    out = text.split("\n")
    return out[:-1] if out[-1] == "" else out


def resolve(args: Sequence[str], data: str, work: str) -> List[str]:
    return [os.path.join(data, a[3:]) if a.startswith("@D/") else
            os.path.join(work, a[3:]) if a.startswith("@W/") else a
            for a in args]


def check_expect(tap: Writer, c: Expect, output: str) -> None:
    miss = [f"missing: {s}" for s in c.want if s not in output]
    if not miss:
        tap.ok(c.name)
        return
    tap.notok(c.name, miss)
    tap.diag("\n".join("  | " + line for line in lines(output)))


def check_fails(tap: Writer, c: Fails, rc: int, out: str, err: str) -> None:
    n = err.count("\n")
    if rc == c.status and n == 1 and not out:
        tap.ok(f"{c.name} (exit {rc}: {err.rstrip(chr(10))})")
        return
    tap.notok(f"{c.name}: exit {rc} (want {c.status}), {n} stderr lines")
    tap.diag("\n".join("  | " + line for line in lines(err)))


def run_case(tap: Writer, rc_path: str, c: Case, data: str,
             work: str) -> None:
    cmd = [rc_path, *resolve(c.args, data, work)]
    if isinstance(c, Expect):
        p = subprocess.run(cmd, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT)
        check_expect(tap, c, p.stdout.decode(errors="replace"))
        return
    p = subprocess.run(cmd, capture_output=True)
    check_fails(tap, c, p.returncode, p.stdout.decode(errors="replace"),
                p.stderr.decode(errors="replace"))


def run(rc_path: str, data: str, tap: Writer) -> int:
    """The plan first, as kselftest does, then one result per case."""
    tap.plan(len(CASES))
    work = tempfile.mkdtemp(prefix=f"{PROG}.")
    try:
        for name, text in BAD_INPUTS.items():
            with open(os.path.join(work, name), "w") as f:
                f.write(text)
        for c in CASES:
            run_case(tap, rc_path, c, data, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 1 if tap.failed else 0


def main(argv: Sequence[str], root: str) -> int:
    """compare-test [REFCNT-COMPARE] (default build/tools/refcnt-compare,
    under REFCNT_BUILD_DIR if set); exit 2 if it is not there."""
    rc_path: Optional[str] = argv[0] if argv else None
    if rc_path is None:
        build = os.environ.get("REFCNT_BUILD_DIR") or os.path.join(
            root, "build")
        rc_path = os.path.join(build, "tools/refcnt-compare")
    if not (os.path.isfile(rc_path) and os.access(rc_path, os.X_OK)):
        print(f"{PROG}: error: no {rc_path} (make tools)", file=sys.stderr)
        return 2
    return run(rc_path, os.path.join(root, "tools/testing/truth/compare-data"),
               Writer())
