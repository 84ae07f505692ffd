# SPDX-License-Identifier: GPL-2.0
"""rig.tap on the shapes of TAP make check meets: kselftest's nested
streams in a serial log, truncated runs, interleaved kernel lines,
plans given last, CRs."""
from __future__ import annotations

import os
import unittest

from rig import tap

DATA = os.path.join(os.path.dirname(__file__), "data")


def counts(text: str) -> tuple[int, int, int]:
    c = tap.parse(text.split("\n")).counts
    return (c.passed, c.failed, c.skipped)


class Results(unittest.TestCase):
    def test_ok_not_ok_skip_todo(self) -> None:
        self.assertEqual(counts("1..5\nok 1 a\nnot ok 2 b\nok 3 c # SKIP no\n"
                                "not ok 4 d # TODO later\nok 5 e # skip x"),
                         (1, 1, 3))

    def test_not_ok_skip_is_a_skip(self) -> None:
        self.assertEqual(counts("not ok 1 x # SKIP not here"), (0, 0, 1))

    def test_indented_and_hash_lines_do_not_count(self) -> None:
        self.assertEqual(counts("  ok 1 nested\n# ok 2 diag\n    not ok 3 n\n"
                                "ok 1 parent"), (1, 0, 0))

    def test_word_must_end(self) -> None:
        # "okay" and "not okay" are not results; "ok" alone is.
        self.assertEqual(counts("okay\nnot okay\nok\nnot ok"), (1, 1, 0))

    def test_bail_out(self) -> None:
        s = tap.parse(["1..2", "ok 1 a", "Bail out! no device"])
        self.assertEqual((s.counts.passed, s.counts.failed), (1, 2))
        self.assertEqual([f.what for f in s.failures],
                         ["Bail out! no device",
                          "incomplete: 1 of 2 planned results"])

    def test_carriage_returns(self) -> None:
        self.assertEqual(counts("1..2\r\nok 1 a\r\nnot ok 2 b\r\r\n"),
                         (1, 1, 0))


class Plans(unittest.TestCase):
    def test_truncated_stream_is_one_failure_more(self) -> None:
        s = tap.parse(["1..4", "ok 1 a", "ok 2 b"])
        self.assertEqual((s.counts.passed, s.counts.failed), (2, 1))
        self.assertEqual(s.failures[0].what,
                         "incomplete: 2 of 4 planned results")

    def test_plan_last(self) -> None:
        self.assertEqual(counts("ok 1 a\nok 2 b\n1..2"), (2, 0, 0))
        self.assertEqual(counts("ok 1 a\n1..3"), (1, 1, 0))

    def test_each_stream_closes_the_last(self) -> None:
        # Two binaries of one log: the first died after one of its two.
        self.assertEqual(counts("1..2\nok 1 a\n1..1\nok 1 b"), (2, 1, 0))

    def test_more_results_than_planned_are_counted(self) -> None:
        self.assertEqual(counts("1..1\nok 1 a\nok 2 b"), (2, 0, 0))


class Context(unittest.TestCase):
    def test_failure_keeps_what_the_test_said(self) -> None:
        lines = ["1..2", "ok 1 a"] + [f"# line {i}" for i in range(20)] + \
            ["[   1.0] kernel line", "not ok 2 b"]
        f = tap.parse(lines).failures[0]
        self.assertEqual(f.what, "not ok 2 b")
        self.assertEqual(len(f.context), tap.CONTEXT_LINES)
        self.assertEqual(f.context[-1], "[   1.0] kernel line")
        self.assertEqual(f.context[0], "# line 9")

    def test_context_starts_after_the_previous_result(self) -> None:
        f = tap.parse(["# before", "ok 1 a", "# mine", "not ok 2 b"])
        self.assertEqual(f.failures[0].context, ["# mine"])

    def test_diagnostics_after_a_failure_are_its_own(self) -> None:
        s = tap.parse(["1..3", "warning: from the build", "not ok 1 a",
                       "#   refcnt {'1': 3}", "#   truth  {'1': 4}",
                       "ok 2 b", "# not a", "not ok 3 c"])
        self.assertEqual(s.failures[0].after,
                         ["#   refcnt {'1': 3}", "#   truth  {'1': 4}"])
        self.assertEqual(s.failures[1].after, [])
        lines = tap.failure_lines([s])
        self.assertEqual(lines[1:3], ["  #   refcnt {'1': 3}",
                                      "  #   truth  {'1': 4}"])
        self.assertNotIn("  warning: from the build", lines)
        self.assertIn("  # not a", lines)

    def test_diagnostics_end_at_the_first_other_line(self) -> None:
        f = tap.parse(["not ok 1 a", "# mine", "[ 1.0] kernel",
                       "# the next test's"]).failures[0]
        self.assertEqual(f.after, ["# mine"])


class CapturedLogs(unittest.TestCase):
    """Guest serial logs as refcnt-vm writes them (trimmed captures)."""

    def parse(self, name: str) -> tap.Stream:
        return tap.parse_file(os.path.join(DATA, name))

    def test_kselftest_log_with_kernel_lines(self) -> None:
        s = self.parse("guest-pass.log")
        self.assertEqual(s.counts, tap.Counts(9, 0, 2))
        self.assertEqual(s.failures, [])

    def test_guest_that_died_mid_test(self) -> None:
        s = self.parse("guest-truncated.log")
        self.assertEqual(s.counts, tap.Counts(3, 1, 0))
        self.assertEqual([f.what for f in s.failures],
                         ["incomplete: 3 of 6 planned results"])

    def test_failure_with_interleaved_kernel_report(self) -> None:
        s = self.parse("guest-fail.log")
        self.assertEqual(s.counts, tap.Counts(2, 2, 0))
        self.assertEqual(s.failures[0].what,
                         "not ok 2 counters.sets_fold_bad_args")
        self.assertIn("# counters_test.c:912:sets_fold_bad_args:Expected "
                      "-1 (-1) == rc (0)", s.failures[0].context)

    def test_failure_lines_for_the_summary(self) -> None:
        s = self.parse("guest-fail.log")
        lines = tap.failure_lines([s])
        self.assertEqual(lines[0], f"{s.name}: not ok 2 counters.sets_fold_bad_args")
        self.assertIn("  # counters_test.c:912:sets_fold_bad_args:Expected "
                      "-1 (-1) == rc (0)", lines)
        self.assertEqual(sum(1 for x in lines if not x.startswith("  ")), 2)
        self.assertLessEqual(len(lines), 2 * (1 + tap.WHY_PER_FAILURE))

    def test_total(self) -> None:
        t = tap.total([self.parse("guest-pass.log"),
                       self.parse("guest-fail.log")])
        self.assertEqual(t.line(), "11 passed, 2 failed, 2 skipped")


if __name__ == "__main__":
    unittest.main()
