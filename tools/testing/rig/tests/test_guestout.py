# SPDX-License-Identifier: GPL-2.0
"""rig.guestout: the files a guest sends back through its serial log
(golden: what the bash objects-check's extract wrote from the same log),
the results file's head, the scripts' option loop."""
from __future__ import annotations

import contextlib
import io
import os
import tempfile
import unittest

from rig import guestout as G

DATA = os.path.join(os.path.dirname(__file__), "data")


def read_bytes(path: str) -> bytes:
    with open(path, "rb") as f:
        return f.read()


class Blocks(unittest.TestCase):
    def test_extract_matches_bash(self) -> None:
        golden = os.path.join(DATA, "objects-extract.golden")
        with tempfile.TemporaryDirectory() as d:
            out = os.path.join(d, "x")
            G.extract(os.path.join(DATA, "objects-guest.log"), out)
            self.assertEqual(sorted(os.listdir(out)),
                             sorted(os.listdir(golden)))
            for f in os.listdir(golden):
                self.assertEqual(read_bytes(os.path.join(out, f)),
                                 read_bytes(os.path.join(golden, f)), f)

    def test_console_lines_and_cr_dropped(self) -> None:
        b = G.blocks("x\r\n@@file a\r\nYQ==\r\n[ 1.0] k\n@@end\r\n")
        self.assertEqual(b, {"a": ["YQ=="]})
        self.assertEqual(G.blocks("@@file t\n[a]\n@@end\n", False),
                         {"t": ["[a]"]})

    def test_block_sent_twice_is_joined(self) -> None:
        b = G.blocks("@@file a\nYW\n@@end\n@@file a\nJj\n@@end\n")
        self.assertEqual(G.b64(b["a"]), b"abc")

    def test_cut_short_block(self) -> None:
        self.assertEqual(G.blocks("@@file a\naGk=\n"), {"a": ["aGk="]})
        self.assertEqual(G.b64(["aGVsbG8K!!!x"]), b"hello\n")
        self.assertEqual(G.b64(["aGVsbG"]), b"hell")
        self.assertEqual(G.b64([]), b"")

    def test_no_path_out_of_the_directory(self) -> None:
        with tempfile.TemporaryDirectory() as d:
            log = os.path.join(d, "log")
            with open(log, "w") as f:
                f.write("@@file ../up\naGk=\n@@end\n")
            G.extract(log, os.path.join(d, "x"))
            self.assertEqual(sorted(os.listdir(d)), ["log", "x"])
            self.assertEqual(os.listdir(os.path.join(d, "x")), ["rc"])


class Results(unittest.TestCase):
    def test_header(self) -> None:
        h = G.results_header("objects-redis", "6.1.0-56-amd64", "objects-check",
                             ["--stages", "redis"], 1796000000.0, "vm",
                             "AMD EPYC", 2, "6.1.0", "abc123")
        self.assertEqual(h, "# refcnt objects-redis, 2026-11-30 00:53 UTC\n"
                         "# host: vm, AMD EPYC, 2 CPUs, kernel 6.1.0\n"
                         "# guest kernel: 6.1.0-56-amd64\n"
                         "# tree: abc123\n"
                         "# command: objects-check --stages redis\n"
                         "# the figures come from QEMU guests (emulated NUMA, "
                         "emulated counters), not hardware\n")
        h = G.results_header("b", "", "p", [], 0.0, "h", "", 1, "r", "t")
        self.assertIn("# host: h, unknown CPU, 1 CPUs", h)
        self.assertNotIn("guest kernel", h)

    def test_cpu_model(self) -> None:
        self.assertEqual(G.cpu_model("processor\t: 0\nmodel name\t: AMD "
                                     "EPYC 7B13\nflags\t: x\n"),
                         "AMD EPYC 7B13")
        self.assertEqual(G.cpu_model(""), "")


class Options(unittest.TestCase):
    VALUES = {"--kernel": "", "--timeout": "900"}

    def test_values_and_flags(self) -> None:
        o = G.parse_opts(["--kernel", "k", "-v", "--timeout", "5"],
                         self.VALUES, flags=("--verbose",))
        self.assertEqual(o, {"--kernel": "k", "--timeout": "5",
                             "--verbose": "1"})
        self.assertEqual(G.parse_opts([], self.VALUES), self.VALUES)

    def test_errors(self) -> None:
        with self.assertRaisesRegex(G.Usage, "unknown argument '--x' "
                                    r"\(see --help\)"):
            G.parse_opts(["--x"], self.VALUES)
        with self.assertRaisesRegex(G.Usage, "--kernel needs a value"):
            G.parse_opts(["--kernel"], self.VALUES)
        with self.assertRaises(G.HelpAsked):
            G.parse_opts(["--kernel", "k", "-h"], self.VALUES)

    def test_entry_statuses(self) -> None:
        def die(argv: list[str]) -> int:
            raise G.Die("no module")

        def usage(argv: list[str]) -> int:
            raise G.Usage("bad")
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            self.assertEqual(G.entry("p", die, []), 1)
            self.assertEqual(G.entry("p", usage, []), 2)
        self.assertEqual(err.getvalue(), "p: error: no module\np: bad\n")


if __name__ == "__main__":
    unittest.main()
