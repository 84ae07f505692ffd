# SPDX-License-Identifier: GPL-2.0
"""rig.comparetest: the cases' TAP, and a run against a refcnt-compare
that fails everything."""
from __future__ import annotations

import io
import os
import stat
import tempfile
import unittest

from rig import comparetest as ct
from rig import tapout


class Cases(unittest.TestCase):
    def test_plan_is_every_case(self) -> None:
        self.assertEqual(len(ct.CASES), 19)
        self.assertEqual(len({c.name for c in ct.CASES}), 19)

    def test_files_by_name(self) -> None:
        self.assertEqual(ct.resolve(["-r", "@D/regions", "@W/bad.csv"],
                                    "/d", "/w"),
                         ["-r", "/d/regions", "/w/bad.csv"])

    def test_expect(self) -> None:
        out = io.StringIO()
        w = tapout.Writer(out)
        c = ct.Expect("x", (), ("alpha", "beta"))
        ct.check_expect(w, c, "alpha beta\n")
        ct.check_expect(w, c, "alpha\nrest")
        self.assertEqual(out.getvalue(), (
            "ok 1 x\nnot ok 2 x\n#   missing: beta\n#   | alpha\n"
            "#   | rest\n"))

    def test_fails(self) -> None:
        out = io.StringIO()
        w = tapout.Writer(out)
        c = ct.Fails("f", 1, ())
        ct.check_fails(w, c, 1, "", "refcnt-compare: bad\n")
        ct.check_fails(w, c, 1, "out", "refcnt-compare: bad\n")
        ct.check_fails(w, c, 2, "", "a\nb\n")
        self.assertEqual(out.getvalue(), (
            "ok 1 f (exit 1: refcnt-compare: bad)\n"
            "not ok 2 f: exit 1 (want 1), 1 stderr lines\n"
            "#   | refcnt-compare: bad\n"
            "not ok 3 f: exit 2 (want 1), 2 stderr lines\n"
            "#   | a\n#   | b\n"))

    def test_run_against_a_broken_compare(self) -> None:
        with tempfile.TemporaryDirectory() as d:
            fake = os.path.join(d, "refcnt-compare")
            with open(fake, "w") as f:
                f.write("#!/bin/sh\nexit 0\n")
            os.chmod(fake, stat.S_IRWXU)
            out = io.StringIO()
            w = tapout.Writer(out)
            self.assertEqual(ct.run(fake, d, w), 1)
        lines = out.getvalue().split("\n")
        self.assertEqual(lines[0], "1..19")
        self.assertEqual(w.failed, 19)
