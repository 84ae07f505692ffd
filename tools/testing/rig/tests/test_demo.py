# SPDX-License-Identifier: GPL-2.0
"""rig.demo (make demo): refcnt-vm's command line, what of the console is
shown, the pegging check and the truth's table, against golden outputs of
the bash refcnt-demo on a captured demo log (its file blocks shortened)."""
from __future__ import annotations

import os
import unittest

from rig import demo
from rig import guestout as G

DATA = os.path.join(os.path.dirname(__file__), "data")
KVER = "6.1.0-56-amd64"
LIBS = ["--file", "/lib/for/demo-workload:/lib/for/demo-workload",
        "--file", "/lib/for/librefcnt-track.so:/lib/for/librefcnt-track.so"]


def read(name: str) -> str:
    with open(os.path.join(DATA, name)) as f:
        return f.read()


def golden_args(name: str) -> list[str]:
    # The guest's script is one argument over several lines: the last.
    text = read(name)
    head, _, script = text.partition("\n--\n")
    return [G.tool("refcnt-vm")] + [
        a.replace("@ROOT@", "/r") for a in head.split("\n")] + \
        ["--", script[:-1]]


class Demo(unittest.TestCase):
    def test_command_line(self) -> None:
        c = demo.Config.from_env(KVER, {})
        self.assertEqual(demo.vm_cmd(c, LIBS),
                         golden_args("demo-vm-args.golden"))

    def test_command_line_truth(self) -> None:
        c = demo.Config.from_env(KVER, {"TRUTH": "1"})
        c.root = "/r"
        self.assertEqual(demo.vm_cmd(c, LIBS),
                         golden_args("demo-truth-vm-args.golden"))

    def test_empty_settings_are_the_defaults(self) -> None:
        # make demo passes HUB= and TRUTH= when they are not set.
        c = demo.Config.from_env(KVER, {"HUB": "", "TRUTH": "",
                                        "HUB_PERIOD": ""})
        self.assertEqual((c.hub, c.truth, c.hub_period), (True, False, "64"))

    def test_no_hub(self) -> None:
        c = demo.Config.from_env(KVER, {"HUB": "0", "HUB_PERIOD": "16"})
        cmd = demo.vm_cmd(c, [])
        self.assertNotIn("--modparams", cmd)
        self.assertFalse([a for a in cmd if a.startswith("--hub")])
        c = demo.Config.from_env(KVER, {"HUB_PERIOD": "16"})
        self.assertIn("--hub=16", demo.vm_cmd(c, []))

    def test_shown(self) -> None:
        log = read("demo-guest.log")
        serial = log[:log.index("===== refcnt-vm: guest dmesg")]
        self.assertEqual(demo.shown(serial.split("\n")[:-1]),
                         read("demo-shown.golden").split("\n")[:-1])

    def test_pegging(self) -> None:
        lines, ok = demo.pegging(read("demo-guest.log"))
        self.assertTrue(ok)
        self.assertEqual(lines, read("demo-pegging.golden").split("\n")[:-1])

    def test_pegged(self) -> None:
        log = read("demo-guest.log").replace("pegged 0 saturated",
                                             "pegged 2000000 saturated")
        lines, ok = demo.pegging(log)
        self.assertFalse(ok)
        self.assertEqual(lines[0], "6000000 of 219171520 references counted "
                         "by the nodes were lost to pegging: 2.738% (goal: "
                         "under 1%)")

    def test_no_statistics(self) -> None:
        self.assertEqual(demo.pegging("== after the run\nfeeds: x\n"),
                         (["demo: no node statistics after the run (see "
                           "build/demo.log)"], False))

    def test_compare_table(self) -> None:
        self.assertEqual(demo.compare_table(read("demo-compare.json")),
                         read("demo-compare.golden").split("\n")[:-1])


if __name__ == "__main__":
    unittest.main()
