# SPDX-License-Identifier: GPL-2.0
"""rig.objects (objects-check, redis-check): refcnt-vm's command lines,
the stages' TAP as one stream and the redis results file, against golden
outputs the bash scripts wrote (their refcnt-vm replaced by one that
records its arguments)."""
from __future__ import annotations

import contextlib
import io
import os
import unittest
from typing import List

from rig import guestout as G
from rig import objects

DATA = os.path.join(os.path.dirname(__file__), "data")
BUILD = "/b"
LIBS = ["--file", "/lib/for/obj-workload:/lib/for/obj-workload",
        "--file", "/lib/for/librefcnt-track.so:/lib/for/librefcnt-track.so",
        "--file", "/lib/for/perl:/lib/for/perl"]


def read(name: str) -> str:
    with open(os.path.join(DATA, name)) as f:
        return f.read()


def golden_args(name: str) -> List[str]:
    """A golden refcnt-vm command line (its arguments one a line)."""
    return [G.tool("refcnt-vm")] + [
        a.replace("@BUILD@", BUILD).replace("@TOOLS@", G.TOOLS)
        for a in read(name).split("\n")[:-1]]


class CommandLines(unittest.TestCase):
    def test_exact(self) -> None:
        c = objects.Config(kernel="6.1.0-56-amd64", build=BUILD,
                           logdir=f"{BUILD}/logs")
        cmd = objects.busybox_cmd(
            c, "exact", f"{BUILD}/logs/objects-exact.log", LIBS,
            objects.exact_extra(f"{c.out}/exact-truth.csv"))
        self.assertEqual(cmd, golden_args("objects-exact-vm-args.golden"))

    def test_bad_has_no_device(self) -> None:
        c = objects.Config(kernel="k", build=BUILD, logdir="/l", timeout=5)
        cmd = objects.busybox_cmd(c, "bad", "/l/objects-bad.log", [])
        self.assertEqual(cmd[-2:], ["--", "/refcnt/objects-guest bad"])
        self.assertNotIn("--hub=1", cmd)
        self.assertEqual(cmd[cmd.index("--timeout") + 1], "5")

    def test_redis(self) -> None:
        cmd = objects.redis_cmd("6.1.0-56-amd64", BUILD,
                                f"{BUILD}/logs/objects-redis.log", 600)
        self.assertEqual(cmd, golden_args("redis-vm-args.golden"))


class Tap(unittest.TestCase):
    def test_merged_as_bash_did(self) -> None:
        texts = [read(f"objects-{s}.tap") for s in ("bad", "exact", "html")]
        self.assertEqual(objects.merge_tap(texts),
                         read("objects-merged.golden"))

    def test_nothing(self) -> None:
        self.assertEqual(objects.merge_tap([]), "1..0\n")

    def test_guest_failed(self) -> None:
        self.assertEqual(objects.guest_failed("objects bad", "/l/x.log"),
                         "1..1\nnot ok 1 objects bad: the guest run failed "
                         "(log /l/x.log)\n")


class Redis(unittest.TestCase):
    def test_results_file_as_bash_wrote_it(self) -> None:
        d = os.path.join(DATA, "objects-redis.golden")
        got = objects.redis_report(
            read("redis-guest.log"), read(f"{d}/rc"), read(f"{d}/redis.tap"),
            read(f"{d}/redis-hub.txt"), read(f"{d}/redis-hinting.txt"))
        self.assertEqual(got, read("redis-results.golden"))

    def test_options(self) -> None:
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            self.assertEqual(G.entry("redis-check", objects.redis_main,
                                     ["--log", "x"]), 2)
            self.assertEqual(G.entry("redis-check", objects.redis_main,
                                     ["--bogus"]), 2)
        self.assertEqual(err.getvalue(),
                         "redis-check: --log and --out are needed\n"
                         "redis-check: unknown argument '--bogus'\n")

    def test_unknown_stage(self) -> None:
        c = objects.Config(kernel="k", build=BUILD, logdir="/l",
                           stages=["exactly"])
        with self.assertRaisesRegex(G.Die, "unknown stage 'exactly'"):
            objects.Objects(c).run()


if __name__ == "__main__":
    unittest.main()


class TextIntervals(unittest.TestCase):
    """The sampled text report against its JSON (the html stage)."""
    JSON = ('{"feeds": {"weight": 64, "exact": false}, "objects": ['
            '{"refs": 640, "refs_interval": [306, 1177]}, '
            '{"refs": 0, "refs_interval": [0, 237]}]}')
    TEXT = ("   95% interval of a count: from its samples n, Poisson (Garwood's"
            " exact bounds up to 100 samples, normal above), times 64; ...\n"
            "   0 references (0 samples) ...\n\n"
            "   #   object   refs 95% interval   n0\n"
            "   1   a         640 [306, 1177]   640\n"
            "   2   b           0 [0, 237]        0\n\n"
            "   hottest pages:\n")

    def test_sampled(self) -> None:
        self.assertEqual(objects.text_intervals(self.TEXT, self.JSON), (
            "ok 1 text sampled: the report says how its 95% intervals are "
            "made, and has their column\n"
            "ok 2 text sampled: each of the 2 rows shows its object's 95% "
            "interval, as the JSON\n"))

    def test_wrong(self) -> None:
        text = self.TEXT.replace("[0, 237]", "[0, 238]").replace(
            "times 64", "times 1")
        self.assertEqual(objects.text_intervals(text, self.JSON), (
            "not ok 1 text sampled: the report says how its 95% intervals "
            "are made, and has their column\n"
            "not ok 2 text sampled: each of the 2 rows shows its object's 95% "
            "interval, as the JSON\n#   row 2: no [0, 237]\n"))
        self.assertEqual(objects.text_intervals(self.TEXT, "{"),
                         "not ok 1 text sampled: no JSON report to compare "
                         "with\n")
