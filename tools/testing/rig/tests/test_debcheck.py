# SPDX-License-Identifier: GPL-2.0
"""rig.debcheck (deb-check): the symbols file as the version script makes
it, the packages' dependencies, the guest's TAP numbered after the
host's, refcnt-vm's command line (golden outputs of the bash script's
sed and awk)."""
from __future__ import annotations

import io
import os
import tempfile
import unittest
from typing import IO

from rig import debcheck as D
from rig import guestout as G
from rig.tapout import Writer

DATA = os.path.join(os.path.dirname(__file__), "data")


def read(name: str) -> str:
    with open(os.path.join(DATA, name)) as f:
        return f.read()


class Host(unittest.TestCase):
    def test_map_symbols(self) -> None:
        self.assertEqual(D.map_symbols(read("librefcnt-test.map")),
                         read("librefcnt-test.golden").split("\n")[:-1])

    def test_the_tree_symbols_file(self) -> None:
        want = D.map_symbols(G.read(os.path.join(G.ROOT,
                                                 "lib/librefcnt.map")))
        sym = G.read(os.path.join(G.ROOT, "debian/librefcnt1.symbols"))
        self.assertEqual(want, sorted(ln for ln in sym.split("\n")
                                      if ln.startswith(" ")))

    def test_changelog_version(self) -> None:
        self.assertEqual(D.changelog_version(
            "refcnt (1.3.0-1) bookworm; urgency=medium\n\n  * x\n"),
            "1.3.0-1")
        self.assertEqual(D.changelog_version(""), "")

    def test_depends(self) -> None:
        fields = ["libc6 (>= 2.34), librefcnt1 (= 1.3.0-1), libnuma1\n",
                  "dkms (>= 2.1) | dkms-alt, make\n", "\n",
                  "pcp, libpcp3 (>= 6.0), libc6 (>= 2.14)\n"]
        self.assertEqual(D.depends(fields, D.PKGS),
                         ["dkms", "libc6", "libnuma1", "libpcp3", "make",
                          "pcp"])


class Guest(unittest.TestCase):
    def test_tap_numbered_after_the_host(self) -> None:
        self.assertEqual(D.guest_tap(read("deb-guest.log"), 7),
                         read("deb-guest-tap.golden").split("\n")[:-1])

    def test_command_line(self) -> None:
        c = D.Config(kernel="6.1.0-56-amd64", host_kernel="h", ver="1",
                     timeout=5400)
        cmd = D.vm_cmd(c, c.root_pkgs + " pcp ", "/b/logs", "/b/deb/guest")
        self.assertEqual(cmd, [
            G.tool("refcnt-vm"), "--debian-systemd", "--debian-pkgs",
            "dkms linux-headers-6.1.0-56-amd64 pcp pkg-config libnuma-dev "
            "libpng16-16 libc6-dev pcp ", "--kernel", "6.1.0-56-amd64",
            "--topology", "four", "--no-debug", "--timeout", "5400",
            "--log", "/b/logs/deb-guest.log",
            "--file", f"{G.TOOLS}/deb/deb-guest:/refcnt/deb-guest",
            "--file", f"{G.ROOT}/debian:/refcnt/src/debian",
            "--file", "/b/deb/guest:/refcnt/debs",
            "--mask", "pmcd.service", "--mask", "pmlogger.service",
            "--mask", "pmie.service", "--mask", "pmproxy.service",
            "--quiet", "--", "/refcnt/deb-guest"])
        c.verbose = True
        self.assertNotIn("--quiet", D.vm_cmd(c, "", "/l", "/s"))


class Steps(unittest.TestCase):
    def test_step_lines(self) -> None:
        out = io.StringIO()
        c = D.Config(kernel="k", host_kernel="h", ver="1")
        with tempfile.TemporaryDirectory() as t:
            d = D.DebCheck(c, t, Writer(out))
            d.logs = t

            def noisy(log: IO[str]) -> bool:
                log.write("line 1\nline 2\n")
                return False
            self.assertFalse(d.step("x", "a test", noisy))
            self.assertTrue(d.step("y", "another", lambda log: True))
            self.assertEqual(G.read(os.path.join(t, "deb-x.log")),
                             "line 1\nline 2\n")
        self.assertEqual(out.getvalue(), "not ok 1 a test (0s)\n# line 1\n"
                         "# line 2\nok 2 another (0s)\n")


if __name__ == "__main__":
    unittest.main()
