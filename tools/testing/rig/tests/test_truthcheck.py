# SPDX-License-Identifier: GPL-2.0
"""rig.truthcheck: the bad-input cases, their verdicts, and the truth
table of truth-exact's pages checked."""
from __future__ import annotations

import io
import os
import tempfile
import unittest
import unittest.mock

from rig import tapout
from rig import truthcheck as tc


class BadInput(unittest.TestCase):
    def test_cases(self) -> None:
        cases = tc.bad_inputs("/b/p.so", "/vm", "k", "/w", "/w/t.csv")
        self.assertEqual(len(cases), tc.BAD_INPUT_TESTS)
        self.assertEqual(cases[0].cmd, (
            "qemu-system-x86_64", "-display", "none", "-nodefaults",
            "-machine", "pc", "-plugin",
            "/b/p.so,out=/w/t.csv,ram=0:512,online=0,bogus=1"))
        self.assertEqual(cases[7].cmd, (
            "/vm", "--kernel", "k", "--topology", "one", "--quiet",
            "--timeout", "4", "--truth", "/w/t.csv", "--", "sleep", "100"))
        self.assertEqual(cases[3].file, "/w/no/t.csv")
        self.assertRegex("refcnt-truth: cannot write /w/no/t.csv.tmp: x",
                         cases[3].regex)

    def test_verdicts(self) -> None:
        out = io.StringIO()
        w = tapout.Writer(out)
        with tempfile.TemporaryDirectory() as d:
            b = tc.BadInput("n", "^refcnt-truth: bad", f"{d}/t.csv", ())
            tc.judge_bad_input(b, 1, "qemu: x\nrefcnt-truth: bad 'x'\n", w)
            tc.judge_bad_input(b, 0, "refcnt-truth: bad\n", w)
            open(f"{d}/t.csv.tmp", "w").close()
            tc.judge_bad_input(b, 1, "refcnt-truth: bad\n", w)
        self.assertEqual(out.getvalue(), (
            "ok 1 n (exit 1: refcnt-truth: bad 'x')\n"
            "not ok 2 n\n#   exit 0, 1 matching lines, file left: \n"
            "#   stderr: refcnt-truth: bad\n"
            f"not ok 3 n\n#   exit 1, 1 matching lines, file left: "
            f"{d}/t.csv.tmp\n#   stderr: refcnt-truth: bad\n"))


TABLE = ["set,paddr,node,cnodeid,refs,n0,n1,lost",
         "0,0x1000,0,0,1000,1000,0,0", "0,0x2000,1,1,1000,0,1000,0"]


class Exact(unittest.TestCase):
    def test_exact(self) -> None:
        guest = ["truth-exact: page 0x1000 from 0 refs 1000",
                 "truth-exact: page 0x2000 from 1 refs 1000",
                 "truth-exact: cost 1000 calls of 4 instructions"]
        self.assertEqual(tc.check_exact("four", TABLE, guest),
                         (True, ["four: 2 pages checked, 0 wrong"]))

    def test_wrong(self) -> None:
        guest = ["truth-exact: page 0x1000 from 1 refs 1000",
                 "truth-exact: page 0x3000 from 0 refs 1000"]
        self.assertEqual(tc.check_exact("four", TABLE, guest), (False, [
            "0x1000: 1000 references from node 0, expected 0",
            "0x1000: 0 references from node 1, expected 1000",
            "0x3000: no row (expected 1000 from node 0)",
            "four: 2 pages checked, 3 wrong"]))
        self.assertEqual(tc.check_exact("one", TABLE, []),
                         (False, ["no truth-exact output"]))

    def test_string_pages(self) -> None:
        guest = ["truth-exact: page 0x2000 from 0 refs 5",
                 "truth-exact: string page 0x1000 from 0 refs 1000",
                 "truth-exact: string page 0x2000 from 1 refs 1000"]
        self.assertEqual(tc.check_exact("four", TABLE, guest, "string page"),
                         (True, ["four: 2 pages checked, 0 wrong"]))
        self.assertEqual(tc.check_exact("four", TABLE, guest[:1],
                                        "string page"),
                         (False, ["no truth-exact output"]))

    def test_llc_view(self) -> None:
        self.assertEqual(tc.llc_view(["truth-exact: page 0x1 from 0 refs 1000",
                                      "truth-exact: cost 3"]),
                         ["truth-exact: page 0x1 from 0 refs 1",
                          "truth-exact: cost 3"])

    def test_cost(self) -> None:
        self.assertEqual(tc.cost([
            "refs node 0 local 5 remote 1",
            "vcpu 0 insns 10 cost_calls 600 cost_window 2400 cost_open 0",
            "vcpu 1 cost_calls 400 cost_window 1600 cost_open 1"]),
            "1000 4000 1")

    def test_help_is_the_usage(self) -> None:
        out = io.StringIO()
        with unittest.mock.patch("sys.stdout", out):
            self.assertEqual(tc.entry(["--help"], os.getcwd()), 0)
        self.assertTrue(out.getvalue().startswith("truth-check: the tests"))
