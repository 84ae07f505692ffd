# SPDX-License-Identifier: GPL-2.0
"""rig.tapout: the TAP the host checks write, counted back by rig.tap."""
from __future__ import annotations

import io
import unittest

from rig import tap, tapout


class Writer(unittest.TestCase):
    def test_lines_and_counts(self) -> None:
        out = io.StringIO()
        w = tapout.Writer(out)
        w.plan(4)
        w.ok("a")
        w.notok("b", ["why", "and"])
        w.skip("c", "no pcp")
        self.assertFalse(w.ok_if(False, "d"))
        w.diag("x\ny\n")
        self.assertEqual(out.getvalue(), (
            "1..4\nok 1 a\nnot ok 2 b\n#   why\n#   and\n"
            "ok 3 c # SKIP no pcp\nnot ok 4 d\n# x\n# y\n"))
        self.assertEqual((w.n, w.failed), (4, 2))
        s = tap.parse(out.getvalue().split("\n"), "-")
        self.assertEqual(s.counts.line(), "1 passed, 2 failed, 1 skipped")
