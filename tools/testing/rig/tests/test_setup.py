# SPDX-License-Identifier: GPL-2.0
"""rig.setup: the guest kernels from apt's metapackage versions."""
from __future__ import annotations

import unittest

from rig import setup

SHOW = """\
Package: linux-headers-amd64
Version: 6.1.158-1
Depends: linux-headers-6.1.0-41-amd64 (= 6.1.158-1)

Package: linux-headers-amd64
Version: 6.1.170-1
Depends: linux-headers-6.1.0-56-amd64 (= 6.1.170-1)

Package: linux-headers-amd64
Version: 6.12.95-1~bpo12+1
Depends: linux-headers-6.12.95+deb12-amd64 (= 6.12.95-1~bpo12+1)

Package: linux-headers-amd64
Version: 6.12.9-1~bpo12+1
Depends: linux-headers-6.12.9+bpo-amd64 (= 6.12.9-1~bpo12+1)
"""


class Kernels(unittest.TestCase):
    def test_metapackage_versions(self) -> None:
        self.assertEqual(setup.parse_meta_versions(SHOW)[1],
                         ("6.1.170-1", "linux-headers-6.1.0-56-amd64"))

    def test_newest_of_each_series(self) -> None:
        metas = setup.parse_meta_versions(SHOW)
        self.assertEqual(setup.pick_kernel(r"^6\.1\.[0-9]+-[0-9.]+$", metas),
                         "6.1.0-56-amd64")
        # 6.12.95 > 6.12.9 as Debian versions, not as strings.
        self.assertEqual(setup.pick_kernel(r"^6\.12\.[0-9]+-.*~bpo12",
                                           metas), "6.12.95+deb12-amd64")
        self.assertEqual(setup.pick_kernel(r"^7\.", metas), "")

    def test_every_package_is_named_once(self) -> None:
        self.assertEqual(len(setup.BASE_PKGS), len(set(setup.BASE_PKGS)))


if __name__ == "__main__":
    unittest.main()
