# SPDX-License-Identifier: GPL-2.0
"""rig.apt: finding and adding apt sources in both formats, keeping the
machine's own mirror."""
from __future__ import annotations

import os
import tempfile
import unittest
from typing import Dict

from rig import apt

DEB822 = """\
Types: deb
# http://snapshot.example/archive/debian/20250520T000000Z
URIs: http://mirror.invalid/debian
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: http://mirror.invalid/debian-security
Suites: bookworm-security
Components: main
"""


class Sources(unittest.TestCase):
    def etc(self, files: Dict[str, str]) -> str:
        d = tempfile.mkdtemp()
        self.addCleanup(lambda: __import__("shutil").rmtree(d))
        os.mkdir(os.path.join(d, "sources.list.d"))
        for name, text in files.items():
            with open(os.path.join(d, name), "w") as f:
                f.write(text)
        return d

    def read(self, path: str) -> str:
        with open(path) as f:
            return f.read()

    def test_deb822_backports_added_from_the_main_stanza(self) -> None:
        etc = self.etc({"sources.list.d/debian.sources": DEB822})
        self.assertFalse(apt.have(etc, "bookworm-backports"))
        out, src = apt.add(etc, "deb", "bookworm-backports", "refcnt-bp")
        self.assertEqual(src, os.path.join(etc, "sources.list.d/"
                                           "debian.sources"))
        self.assertEqual(self.read(out), (
            "Types: deb\nURIs: http://mirror.invalid/debian\n"
            "Suites: bookworm-backports\nComponents: main\n"
            "Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg\n"))
        self.assertTrue(apt.have(etc, "bookworm-backports"))

    def test_deb822_deb_src_keeps_the_suites(self) -> None:
        etc = self.etc({"sources.list.d/debian.sources": DEB822})
        self.assertFalse(apt.have(etc, "bookworm", "deb-src"))
        self.assertTrue(apt.have(etc, "bookworm", "deb"))
        out, _ = apt.add(etc, "deb-src", None, "refcnt-src")
        self.assertIn("Types: deb-src\n", self.read(out))
        self.assertIn("Suites: bookworm bookworm-updates\n", self.read(out))
        self.assertTrue(apt.have(etc, "bookworm", "deb-src"))

    def test_disabled_stanza_does_not_count(self) -> None:
        etc = self.etc({"sources.list.d/bp.sources":
                        "Types: deb\nURIs: http://m.invalid/d\n"
                        "Suites: bookworm-backports\nEnabled: no\n"})
        self.assertFalse(apt.have(etc, "bookworm-backports"))
        with self.assertRaisesRegex(ValueError, "no Debian bookworm entry"):
            apt.add(etc, "deb", "bookworm-backports", "x")

    def test_one_line_entries(self) -> None:
        etc = self.etc({"sources.list":
                        "# deb http://old.invalid/debian bookworm main\n"
                        "deb [arch=amd64 signed-by=/k.gpg] "
                        "http://m.invalid/debian  bookworm main contrib\n"})
        self.assertFalse(apt.have(etc, "bookworm-backports"))
        out, _ = apt.add(etc, "deb", "bookworm-backports", "refcnt-bp")
        self.assertTrue(out.endswith("sources.list.d/refcnt-bp.list"))
        self.assertEqual(self.read(out),
                         "deb [arch=amd64 signed-by=/k.gpg] "
                         "http://m.invalid/debian bookworm-backports main "
                         "contrib\n")
        self.assertTrue(apt.have(etc, "bookworm-backports"))
        src, _ = apt.add(etc, "deb-src", None, "refcnt-src")
        self.assertEqual(self.read(src).split()[0], "deb-src")
        self.assertTrue(apt.have(etc, "bookworm", "deb-src"))


if __name__ == "__main__":
    unittest.main()
