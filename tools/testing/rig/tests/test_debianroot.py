# SPDX-License-Identifier: GPL-2.0
"""rig.debianroot (refcnt-debian-root): the cache key and its directory
(POSIX cksum, as the bash script named them), the package list, the
host's mirror and sources (golden outputs of the bash script's awk on the
same apt configurations)."""
from __future__ import annotations

import os
import tempfile
import unittest

from rig import debianroot as R

DATA = os.path.join(os.path.dirname(__file__), "data")


def read(name: str) -> str:
    with open(os.path.join(DATA, name)) as f:
        return f.read()


class Key(unittest.TestCase):
    def test_cksum_as_posix(self) -> None:
        # cksum(1)'s answers.
        self.assertEqual(R.cksum(b""), 4294967295)
        self.assertEqual(R.cksum(b"a"), 1220704766)
        key = ("bookworm recipe=2 pkgs=iproute2 kmod libnuma1 libpng16-16 "
               "pcp prometheus zlib1g")
        self.assertEqual(R.cksum(key.encode()), 142753948)

    def test_package_list(self) -> None:
        self.assertEqual(R.package_list(["prometheus,pcp", "kmod"]),
                         "iproute2 kmod libmicrohttpd12 libnuma1 libpng16-16 "
                         "pcp prometheus zlib1g")
        self.assertEqual(R.package_list([]), R.package_list(["zlib1g"]))
        with self.assertRaisesRegex(ValueError, "'Bad' is not"):
            R.package_list(["pcp Bad"])
        with self.assertRaisesRegex(ValueError, "'x' is not"):
            R.package_list(["x"])

    def test_image_directory(self) -> None:
        r = R.Root(deb="/d", pkgs=R.package_list(["pcp prometheus"]))
        # The key's cksum, as the bash script's: the test above.
        key = ("bookworm recipe=2 pkgs=iproute2 kmod libmicrohttpd12 "
               "libnuma1 libpng16-16 pcp prometheus zlib1g")
        self.assertEqual(r.img, f"/d/{R.cksum(key.encode())}")

    def test_cached(self) -> None:
        with tempfile.TemporaryDirectory() as d:
            r = R.Root(deb=d, pkgs=R.package_list([]))
            self.assertFalse(r.cached())
            os.makedirs(r.img)
            with open(os.path.join(r.img, "root.img"), "w") as f:
                f.write("x")
            with open(os.path.join(r.img, "root.key"), "w") as f:
                f.write(r.key + "\n")
            self.assertTrue(r.cached())
            r.force = True
            self.assertFalse(r.cached())

    def test_late_packages_and_size(self) -> None:
        self.assertEqual(R.split_late("kmod pcp systemd udev"),
                         [["kmod", "pcp"], ["systemd", "udev"]])
        self.assertEqual(R.image_mb(400), 756)


class Sources(unittest.TestCase):
    def check(self, name: str) -> None:
        etc = os.path.join(DATA, name)
        golden = read(name + ".golden").split("\n")[:-1]
        self.assertEqual(R.host_mirror(etc), golden[0])
        self.assertEqual(R.host_sources(etc), golden[2:])

    def test_deb822_first(self) -> None:
        self.check("apt-etc")

    def test_one_line(self) -> None:
        self.check("apt-etc-oneline")

    def test_none(self) -> None:
        with tempfile.TemporaryDirectory() as d:
            self.assertIsNone(R.host_mirror(d))
            self.assertEqual(R.host_sources(d), [])


if __name__ == "__main__":
    unittest.main()
