# SPDX-License-Identifier: GPL-2.0
"""rig.fleet (fleet-check): refcnt-vm's command line and the TAP taken
from the guest's log, against golden outputs of the bash fleet-check."""
from __future__ import annotations

import os
import unittest

from rig import fleet
from rig import guestout as G

DATA = os.path.join(os.path.dirname(__file__), "data")
KVER = "6.12.95+deb12-amd64"


def read(name: str) -> str:
    with open(os.path.join(DATA, name)) as f:
        return f.read()


class Fleet(unittest.TestCase):
    def config(self, verbose: bool = False) -> fleet.Config:
        return fleet.Config(kernel=KVER, build="/b", timeout=1200,
                            log=f"/b/logs/fleet-{KVER}.log", verbose=verbose)

    def test_command_line(self) -> None:
        want = [G.tool("refcnt-vm")] + [
            a.replace("@BUILD@", "/b").replace("@TOOLS@", G.TOOLS)
            for a in read("fleet-vm-args.golden").split("\n")[:-1]]
        self.assertEqual(fleet.vm_cmd(self.config(),
                                      ["lib", "tools", "pmda"]), want)

    def test_verbose_streams_and_missing_dirs_left_out(self) -> None:
        cmd = fleet.vm_cmd(self.config(verbose=True), ["tools"])
        self.assertNotIn("--quiet", cmd)
        self.assertIn("/b/tools:/refcnt/tools", cmd)
        self.assertNotIn("/b/pmda:/refcnt/pmda", cmd)
        self.assertNotIn("/b/lib:/refcnt/lib", cmd)

    def test_tap_lines(self) -> None:
        self.assertEqual(fleet.tap_lines(read("fleet-guest.log")),
                         read("fleet-tap.golden"))


if __name__ == "__main__":
    unittest.main()
