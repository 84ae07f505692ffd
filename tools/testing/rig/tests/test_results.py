# SPDX-License-Identifier: GPL-2.0
"""rig.results: the lines make check prints and CI reads."""
from __future__ import annotations

import unittest
from typing import List

from rig.results import Results
from rig.tap import Counts


class Summary(unittest.TestCase):
    def setUp(self) -> None:
        self.out: List[str] = []
        self.r = Results(t_start=0.0, out=self.out.append)

    def test_last_line_is_the_counts(self) -> None:
        self.r.passed("selftests (57s)")
        self.r.failed("tools: exit 2 (4s)")
        self.r.skipped("fleet 6.12", "no Debian root")
        lines = self.r.summary()
        self.assertEqual(lines[-1], "1 passed, 1 failed, 1 skipped")
        self.assertEqual(lines[2:5], ["  ok       selftests (57s)",
                                      "  not ok   tools: exit 2 (4s)",
                                      "  skip     fleet 6.12: no Debian root"])
        self.assertEqual(self.out, ["ok      selftests (57s)",
                                    "not ok  tools: exit 2 (4s)",
                                    "skip    fleet 6.12: no Debian root"])
        self.assertFalse(self.r.ok)

    def test_tap_step_counts_a_silent_failure(self) -> None:
        self.assertFalse(self.r.add_tap("guest x/four", Counts(5, 0, 1),
                                        124, 0.0)[0])
        self.assertEqual(self.r.counts, Counts(5, 1, 1))
        self.assertRegex(self.r.records[-1].text,
                         r"^guest x/four: 5 passed, 0 failed, 1 skipped "
                         r"\+ 1 failed: exit 124 \(\d+s\)$")

    def test_tap_step_failures_are_not_counted_twice(self) -> None:
        self.assertFalse(self.r.add_tap("hub", Counts(3, 2, 0), 1, 0.0)[0])
        self.assertEqual(self.r.counts, Counts(3, 2, 0))
        ok, line = self.r.add_tap("ok", Counts(1, 0, 0), 0, 0.0)
        self.assertTrue(ok)
        self.assertRegex(line, r"^ok: 1 passed, 0 failed, 0 skipped \(\d+s\)$")

    def test_summary_says_why_a_step_failed(self) -> None:
        why = [f"log: not ok {i} t{i}" for i in range(30)]
        self.r.add_tap("guest x/four", Counts(1, 30, 0), 1, 0.0, why)
        self.r.add_tap("ok", Counts(1, 0, 0), 0, 0.0, ["never shown"])
        lines = self.r.summary()
        self.assertEqual(lines[3], "             log: not ok 0 t0")
        self.assertEqual(lines[3 + 23], "             log: not ok 23 t23")
        self.assertEqual(lines[3 + 24], "             ... 6 lines more in the log")
        self.assertRegex(lines[-2], r"^  ok       ok: 1 passed")


if __name__ == "__main__":
    unittest.main()
