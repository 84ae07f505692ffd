# SPDX-License-Identifier: GPL-2.0
"""rig.bench (make bench): the options, refcnt-vm's command line and the
guest's table, against golden outputs of the bash refcnt-bench run with a
stand-in refcnt-vm that played back bench-guest.log."""
from __future__ import annotations

import os
import unittest

from rig import bench
from rig import hostcmd as H

DATA = os.path.join(os.path.dirname(__file__), "data")


def read(name: str) -> str:
    with open(os.path.join(DATA, name)) as f:
        return f.read()


class Bench(unittest.TestCase):
    def test_options(self) -> None:
        c = bench.parse(["--kernel", "6.1", "--no-native", "--refs", "5",
                         "--refs", "6", "--native-only"])
        self.assertEqual((c.kver, c.refs, c.repeat, c.native, c.guest,
                          c.build), ("6.1", "6", "3", False, False, True))
        for argv, msg in ((["--kernel"], "--kernel needs an argument"),
                          (["--refs", "0"],
                           "--refs: '0' is not a positive number"),
                          (["--repeat", "x1"],
                           "--repeat: 'x1' is not a positive number")):
            with self.assertRaises(H.Die) as e:
                bench.parse(argv)
            self.assertEqual((str(e.exception), e.exception.status), (msg, 1))
        with self.assertRaises(H.Help):
            bench.parse(["--refs", "0", "-h"])

    def test_command_line(self) -> None:
        c = bench.parse(["--kernel", "6.1.0-56-amd64", "--accel", "kvm",
                         "--topology", "72", "--refs", "6", "--repeat", "2",
                         "--timeout", "77"])
        want = [a.replace("@BUILD@", "/b")
                for a in read("bench-vm-args.golden").split("\n")[:-1]]
        self.assertEqual(bench.vm_cmd("/r", "/b", c),
                         ["/r/tools/testing/refcnt-vm"] + want)

    def test_report(self) -> None:
        lines = H.lines(os.path.join(DATA, "bench-guest.log"))
        used = bench.accelerator(lines)
        self.assertEqual(used, "tcg")
        out = bench.report("6.1.0-56-amd64", "four", used,
                           bench.table(lines, "refcnt bench"),
                           bench.table(lines, "refcnt bench feeds"))
        self.assertEqual("\n".join(out) + "\n\n", read("bench-report.golden"))

    def test_no_table(self) -> None:
        self.assertEqual(bench.table(["=== refcnt bench feeds ===", "x",
                                      "=== end ==="], "refcnt bench"), [])
        self.assertEqual(bench.accelerator(["refcnt-vm: kernel 6.1"]), "")
