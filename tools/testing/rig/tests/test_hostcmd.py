# SPDX-License-Identifier: GPL-2.0
"""rig.hostcmd: the host commands' options and the readers they share."""
from __future__ import annotations

import contextlib
import io
import os
import tempfile
import unittest

from rig import hostcmd as H


class Parse(unittest.TestCase):
    def test_values_flags_multi(self) -> None:
        o = H.parse(["--kernel", "k", "--vm-arg", "a", "--filter",
                     "--vm-arg", "b", "--kernel", "k2"],
                    values=("--kernel",), flags=("--filter",),
                    multi=("--vm-arg",))
        self.assertEqual(o.values, {"--kernel": "k2"})
        self.assertEqual(o.multi, {"--vm-arg": ["a", "b"]})
        self.assertEqual(o.flags, {"--filter": True})

    def test_errors(self) -> None:
        with self.assertRaisesRegex(H.Die, "unknown argument 'x'"):
            H.parse(["x"])
        with self.assertRaisesRegex(H.Die, "--kernel needs an argument"):
            H.parse(["--kernel"], values=("--kernel",))
        with self.assertRaises(H.Help):
            H.parse(["--kernel", "k", "-h"], values=("--kernel",))

    def test_entry(self) -> None:
        def main(argv: object, root: str) -> int:
            raise H.Die("no build/x (make x)", 2)
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            self.assertEqual(H.entry("p", main, [], "/", "doc"), 2)
        self.assertEqual(err.getvalue(), "p: error: no build/x (make x)\n")


class Readers(unittest.TestCase):
    def test_release(self) -> None:
        self.assertEqual(H.release("6.1.0-56-amd64"), "6.1.0-56-amd64")
        with tempfile.TemporaryDirectory() as d:
            os.makedirs(f"{d}/include/config")
            with open(f"{d}/include/config/kernel.release", "w") as f:
                f.write("6.1.99-debug\n")
            self.assertEqual(H.release(f"{d}/bzImage"), "6.1.99-debug")
        self.assertEqual(H.release("/boot/vmlinuz-6.12.1"), "6.12.1")

    def test_grep_after(self) -> None:
        ls = ["a", "Name: refcnt", "x", "y", "z", "Name: refcnt", "w"]
        self.assertEqual(H.grep_after(ls, "Name: *refcnt", 2),
                         ["Name: refcnt", "x", "y", "--", "Name: refcnt",
                          "w"])
        self.assertEqual(H.grep_after(["r1", "r2", "q"], "r", 1),
                         ["r1", "r2", "q"])

    def test_numbers(self) -> None:
        self.assertEqual(H.num("12abc"), 12)
        self.assertEqual(H.num("x"), 0)
        self.assertEqual(H.num(" 1.5"), 1.5)
        self.assertEqual(H.shell_int("0x1f"), 31)
        self.assertEqual(H.shell_int("017"), 15)
        self.assertEqual(H.shell_int("42"), 42)

    def test_lines_drop_carriage_returns(self) -> None:
        with tempfile.NamedTemporaryFile("w", delete=False) as f:
            f.write("a\r\nb\r\n")
        try:
            self.assertEqual(H.lines(f.name), ["a", "b"])
            self.assertEqual(H.tail(f.name, 1), ["b"])
        finally:
            os.unlink(f.name)
        self.assertEqual(H.lines("/nonexistent"), [])

    def test_results_start(self) -> None:
        with tempfile.TemporaryDirectory() as d:
            p = H.results_start(d, d, "hub-bench", "6.1", "hub-bench",
                                ["--kernel", "6.1"])
            self.assertRegex(os.path.basename(p),
                             r"^hub-bench-\d{8}T\d{6}Z\.txt$")
            with open(p) as f:
                head = f.read().split("\n")
        self.assertRegex(head[0], r"^# refcnt hub-bench, \d{4}-\d\d-\d\d ")
        self.assertEqual(head[2], "# guest kernel: 6.1")
        self.assertEqual(head[4], "# command: hub-bench --kernel 6.1")
