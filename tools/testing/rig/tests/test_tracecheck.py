# SPDX-License-Identifier: GPL-2.0
"""rig.tracecheck and rig.traceguest: the checks' verdicts, the plan
against the tests made, the generated traces, and the guest's traces
read."""
from __future__ import annotations

import io
import os
import stat
import tempfile
import unittest
import unittest.mock

from rig import tapout
from rig import tracecheck as tc
from rig import traceguest as tg


def fake_tools(d: str) -> str:
    """Tools that print nothing and succeed."""
    t = os.path.join(d, "tools")
    os.makedirs(t)
    for name in tc.TOOLS:
        p = os.path.join(t, name)
        with open(p, "w") as f:
            f.write("#!/bin/sh\nexit 0\n")
        os.chmod(p, stat.S_IRWXU)
    return t


class Checks(unittest.TestCase):
    def setUp(self) -> None:
        self.d = tempfile.TemporaryDirectory()
        self.work = os.path.join(self.d.name, "w")
        os.makedirs(self.work)
        self.out = io.StringIO()
        self.h = tc.Host("/nonexistent", fake_tools(self.d.name), self.work,
                         tapout.Writer(self.out))

    def tearDown(self) -> None:
        self.d.cleanup()

    def test_expect_and_same(self) -> None:
        self.h.write("a", "x\n  y\n")
        self.h.write("b", "x\n  y\n")
        self.h.expect("e", "a", "  y", "x")
        self.h.expect("e2", "a", "y")
        self.h.same("s", "@W/a", "b")
        self.assertEqual(self.out.getvalue(), (
            "ok 1 e\nnot ok 2 e2\n#   missing: y\n#   --- a:\n#   x\n#     y\n"
            "ok 3 s\n"))

    def test_fails(self) -> None:
        self.h.write("f.sh", "echo 'tool: record 7: bad' >&2; exit 1\n")
        self.h.fails("f", "record [0-9]+: bad", "o.txt", ["sh", "f.sh"])
        self.h.write("o.txt", "")
        self.h.fails("f", "record [0-9]+: bad", "o.txt", ["sh", "f.sh"])
        self.assertEqual(self.out.getvalue().split("\n")[:3], [
            "ok 1 f (tool: record 7: bad)", "not ok 2 f",
            "#   exit 1, 1 stderr lines, output file: o.txt"])

    def test_plan_is_every_host_test(self) -> None:
        """Against tools that print nothing every test fails: once."""
        with unittest.mock.patch("shutil.which", return_value=None):
            self.h.tests(0)
        lines = self.out.getvalue().split("\n")
        self.assertEqual(lines[0], f"1..{tc.HOST_TESTS}")
        self.assertEqual(self.h.w.n, tc.HOST_TESTS)

    def test_traces_made(self) -> None:
        ctl = tc.two_arrays(0).split("\n")
        self.assertEqual(len(ctl), 161)
        self.assertEqual(ctl[:2], ["load 8 0x100000", "load 8 0x101000"])
        self.assertEqual(ctl[8], "load 8 0x200000")
        self.assertEqual(tc.two_arrays(64).split("\n")[8], "load 8 0x200040")
        cap = tc.lines_twice(600).split("\n")
        self.assertEqual((len(cap), cap[1], cap[600]),
                         (1201, "load 8 0x100040", "load 8 0x100000"))


PATTERN = ("trace-pattern: X 0x7f0000001000 0x10002000 Y 0x7f0000003000 "
           "0x30004000 1000 NS 5")
INFO = ["trace gt: 2 threads", "thread 0: format refcnt v1, none, node 1, x",
        "thread 1: format refcnt v1, none, node 0, x"]
PRINT = [
    "thread=1 12 ns load 4 fixed 0x7f0000001008 paddr 0x10002008 node 0",
    "thread=1 13 ns load 4 fixed 0x7f0000001008 paddr 0x10002008 node 0",
    "thread=0 14 ns store 2 fixed 0x7f0000003020 paddr 0x30004020 node 1",
    "thread=0 15 ns load 8 fixed 0x7f0000009000 paddr 0x30009000 node 1",
    "thread=1 16 ns marker 4 0",
    "thread=0 17 ns marker 0 201"]


class Guest(unittest.TestCase):
    def test_pattern(self) -> None:
        p = tg.pattern(["x", PATTERN])
        self.assertEqual(p, tg.Pattern(0x7f0000001000, 0x10002000,
                                       0x7f0000003000, 0x30004000, "1000"))
        self.assertIsNone(tg.pattern(["trace-pattern: X zz"]))
        self.assertEqual((tg.thread_of(INFO, 0), tg.thread_of(INFO, 1)),
                         ("1", "0"))

    def test_records_and_markers(self) -> None:
        p = tg.pattern([PATTERN])
        assert p is not None
        self.assertEqual(tg.pattern_records(PRINT, p), [
            "1 thread=0 store 2 fixed 0x7f0000003020 0x30004020 1",
            "2 thread=1 load 4 fixed 0x7f0000001008 0x10002008 0"])
        want = tg.pattern_want(p, "1", "0")
        self.assertEqual(want[0], "1000 thread=0 load 8 fixed 0x7f0000001000 "
                         "0x10002000 0")
        self.assertIn("1000 thread=1 load 4 fixed 0x7f0000001008 0x10002008 0",
                      want)
        self.assertIn("1000 thread=0 store 2 fixed 0x7f0000003020 0x30004020 1",
                      want)
        self.assertEqual(tg.markers(PRINT), ["thread=1 4 0", "thread=0 0 201"])
        self.assertEqual(tg.markers_want("1", "0")[:2],
                         ["thread=1 4 0", "thread=1 0 101"])

    def test_tdist_line(self) -> None:
        self.assertEqual(tg.tdist_line([
            "trace-guest: tdist: x", "trace-guest: event: 2500000000001 fold"]),
            "trace-guest: tdist: events 2, bin width 1000000000000 ns, bins 1 "
            "(from 2000000000000 to 3000000000000 ns)")
