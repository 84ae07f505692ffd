# SPDX-License-Identifier: GPL-2.0
"""rig.placement (make placement): the settings, refcnt-vm's command line,
the guest's env file and the table's head, against golden outputs of the
bash refcnt-placement run with a stand-in refcnt-vm that played back
placement-serial.log (REFCNT_PLACEMENT_KERNEL=6.1.0-56-amd64,
_SECONDS=5, _WORKLOADS="phase shared", _MODES="none nb1", _VARIANTS
empty)."""
from __future__ import annotations

import os
import unittest

from rig import placement as P

DATA = os.path.join(os.path.dirname(__file__), "data")
ENV = {"REFCNT_PLACEMENT_SECONDS": "5",
       "REFCNT_PLACEMENT_WORKLOADS": "phase shared",
       "REFCNT_PLACEMENT_MODES": "none nb1", "REFCNT_PLACEMENT_VARIANTS": ""}


def read(name: str) -> str:
    with open(os.path.join(DATA, name), newline="") as f:
        return f.read()


class Placement(unittest.TestCase):
    def test_settings(self) -> None:
        c = P.Config.from_env(ENV)
        self.assertEqual((c.variants, c.natural_modes, c.runs(), c.report),
                         ("misplaced natural", "none nb1", 8, False))
        self.assertEqual(c.guest_env(),
                         'SECS=5\nWORKLOADS="phase shared"\n'
                         'VARIANTS="misplaced natural"\nMODES="none nb1"\n'
                         'NATURAL_MODES="none nb1"\n')
        self.assertEqual(c.command()[1],
                         "REFCNT_PLACEMENT_WORKLOADS='phase shared'")
        d = P.Config.from_env({"REFCNT_PLACEMENT_REPORT": "1"})
        self.assertEqual((d.secs, d.runs(), d.report), ("20", 162, True))

    def test_command_line(self) -> None:
        want = [a.replace("@BUILD@", "/b")
                for a in read("placement-vm-args.golden").split("\n")[:-1]]
        self.assertEqual(P.vm_cmd("/r", "/b", "6.1.0-56-amd64",
                                  P.Config.from_env(ENV)),
                         ["/r/tools/testing/refcnt-vm"] + want)

    def test_header(self) -> None:
        serial = P.raw_lines(os.path.join(DATA, "placement-serial.log"))
        self.assertEqual("".join(ln + "\n" for ln in
                                 P.header(serial, P.Config.from_env(ENV))),
                         read("placement-header.golden"))
