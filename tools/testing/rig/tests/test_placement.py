# SPDX-License-Identifier: GPL-2.0
"""rig.placement (make placement): the settings, refcnt-vm's command line,
the guest's env file and the table's head, against golden outputs (first
made by the bash refcnt-placement with a stand-in refcnt-vm that played
back placement-serial.log: REFCNT_PLACEMENT_KERNEL=6.1.0-56-amd64,
_SECONDS=5, _WORKLOADS="phase shared", _MODES="none nb1", _VARIANTS
empty; since then with the instruction clock and repeats)."""
from __future__ import annotations

import os
import unittest
from typing import List

from rig import hostcmd as H
from rig import placement as P

DATA = os.path.join(os.path.dirname(__file__), "data")
ENV = {"REFCNT_PLACEMENT_SECONDS": "5",
       "REFCNT_PLACEMENT_WORKLOADS": "phase shared",
       "REFCNT_PLACEMENT_MODES": "none nb1", "REFCNT_PLACEMENT_VARIANTS": ""}
WALL = dict(ENV, REFCNT_PLACEMENT_ICOUNT="off")


def read(name: str) -> str:
    with open(os.path.join(DATA, name), newline="") as f:
        return f.read()


def golden_args(name: str) -> List[str]:
    return [a.replace("@BUILD@", "/b") for a in read(name).split("\n")[:-1]]


class Placement(unittest.TestCase):
    def test_settings(self) -> None:
        c = P.Config.from_env(ENV)
        self.assertEqual((c.variants, c.natural_modes, c.icount, c.repeats,
                          c.runs(), c.report),
                         ("misplaced natural", "none nb1", "0", 3, 24, False))
        self.assertEqual(c.guest_env(),
                         'SECS=5\nWORKLOADS="phase shared"\n'
                         'VARIANTS="misplaced natural"\nMODES="none nb1"\n'
                         'NATURAL_MODES="none nb1"\nREPEATS=3\n')
        self.assertEqual(c.command()[1],
                         "REFCNT_PLACEMENT_WORKLOADS='phase shared'")
        self.assertEqual(c.command()[5:], ["REFCNT_PLACEMENT_ICOUNT=0",
                                           "REFCNT_PLACEMENT_REPEATS=3"])
        d = P.Config.from_env({"REFCNT_PLACEMENT_REPORT": "1"})
        self.assertEqual((d.secs, d.runs(), d.report), ("5", 486, True))

    def test_seconds_follow_the_clock(self) -> None:
        """The default length is 5 x 10^9 instructions on the instruction
        clock at any shift, 20 s at wall-clock time."""
        for shift, secs in (("0", "5"), ("1", "10"), ("3", "40")):
            c = P.Config.from_env({"REFCNT_PLACEMENT_ICOUNT": shift})
            self.assertEqual(c.secs, secs)
        self.assertEqual(P.Config.from_env(WALL).secs, "5")
        self.assertEqual(
            P.Config.from_env({"REFCNT_PLACEMENT_ICOUNT": "off"}).secs, "20")

    def test_repeats(self) -> None:
        c = P.Config.from_env(dict(WALL, REFCNT_PLACEMENT_REPEATS="1"))
        self.assertEqual((c.runs(), c.timeout()), (8, 8 * 300 + 900))
        self.assertTrue(c.guest_env().endswith("REPEATS=1\n"))
        c = P.Config.from_env(dict(WALL, REFCNT_PLACEMENT_REPEATS="5"))
        self.assertEqual((c.runs(), c.timeout()), (40, 40 * 300 + 900))

    def test_timeout_counts_virtual_seconds(self) -> None:
        # 5 virtual seconds at 10^9 instructions each, at the assumed
        # 10^7 per host second: 500 host seconds more per run.
        c = P.Config.from_env(ENV)
        self.assertEqual(c.timeout(), 24 * (300 + 500) + 900)
        c = P.Config.from_env(dict(ENV, REFCNT_PLACEMENT_ICOUNT="2"))
        self.assertEqual(c.timeout(), 24 * (300 + 125) + 900)

    def test_bad_settings(self) -> None:
        for k, v in (("REFCNT_PLACEMENT_ICOUNT", "11"),
                     ("REFCNT_PLACEMENT_ICOUNT", "on"),
                     ("REFCNT_PLACEMENT_REPEATS", "0"),
                     ("REFCNT_PLACEMENT_REPEATS", "x"),
                     ("REFCNT_PLACEMENT_SECONDS", "2.5")):
            with self.assertRaises(H.Die, msg=f"{k}={v}") as e:
                P.Config.from_env({k: v})
            self.assertTrue(str(e.exception).startswith(k + ": "))

    def test_command_line_icount(self) -> None:
        self.assertEqual(P.vm_cmd("/r", "/b", "6.1.0-56-amd64",
                                  P.Config.from_env(ENV)),
                         ["/r/tools/testing/refcnt-vm"] +
                         golden_args("placement-vm-args-icount.golden"))

    def test_command_line_wall_clock(self) -> None:
        self.assertEqual(P.vm_cmd("/r", "/b", "6.1.0-56-amd64",
                                  P.Config.from_env(WALL)),
                         ["/r/tools/testing/refcnt-vm"] +
                         golden_args("placement-vm-args.golden"))

    def test_header(self) -> None:
        serial = P.raw_lines(os.path.join(DATA, "placement-serial.log"))
        self.assertEqual("".join(ln + "\n" for ln in
                                 P.header(serial, P.Config.from_env(WALL))),
                         read("placement-header.golden"))
        self.assertEqual("".join(ln + "\n" for ln in
                                 P.header(serial, P.Config.from_env(ENV))),
                         read("placement-header-icount.golden"))
