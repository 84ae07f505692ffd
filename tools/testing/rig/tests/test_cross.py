# SPDX-License-Identifier: GPL-2.0
"""rig.cross: the arm64 apt state, the headers' links and Makefile, the
builds' command lines and the ELF check of what they made."""
from __future__ import annotations

import os
import tempfile
import unittest

from rig import cross


class Fetch(unittest.TestCase):
    def test_apt_knows_only_arm64(self) -> None:
        opts = cross.apt_opts("/b/arm64/apt")
        self.assertIn("APT::Architectures=arm64", opts)
        self.assertIn("Dir::State::Lists=/b/arm64/apt/lists", opts)
        self.assertIn("Dir::State::status=/b/arm64/apt/status", opts)

    def test_stamp_follows_the_packages(self) -> None:
        a = cross.stamp_name(["p", "q"])
        self.assertEqual(a, cross.stamp_name(["p", "q"]))
        self.assertNotEqual(a, cross.stamp_name(["p", "q", "r"]))

    def test_headers(self) -> None:
        self.assertEqual(cross.header_pkgs("6.1.0-56"), [
            "linux-headers-6.1.0-56-arm64", "linux-headers-6.1.0-56-common"])
        with tempfile.TemporaryDirectory() as d:
            os.symlink("../../lib/linux-kbuild-6.1/scripts",
                       os.path.join(d, "scripts"))
            self.assertEqual(cross.kbuild_name(d), "linux-kbuild-6.1")
            mk = os.path.join(d, "Makefile")
            with open(mk, "w") as f:
                f.write("include /usr/src/linux-headers-6.1.0-56-common/"
                        "Makefile\n")
            cross.point_makefile(d, "/b/h/6.1.0-56")
            with open(mk) as f:
                self.assertEqual(f.read(), "include /b/h/6.1.0-56/usr/src/"
                                 "linux-headers-6.1.0-56-common/Makefile\n")


class Relocate(unittest.TestCase):
    def test_links_and_ld_scripts_point_inside(self) -> None:
        with tempfile.TemporaryDirectory() as root:
            lib = os.path.join(root, "usr/aarch64-linux-gnu/lib")
            os.makedirs(lib)
            open(os.path.join(lib, "libc.so.6"), "w").close()
            with open(os.path.join(lib, "libc.so"), "w") as f:
                f.write("/* GNU ld script */\nGROUP ( /usr/aarch64-linux-gnu"
                        "/lib/libc.so.6 AS_NEEDED (/usr/x/ld.so ) )\n")
            os.symlink("/usr/aarch64-linux-gnu/lib/libc.so.6",
                       os.path.join(lib, "libc6.so"))
            os.symlink("/etc/nowhere", os.path.join(lib, "other"))
            cross.relocate(root)
            with open(os.path.join(lib, "libc.so")) as f:
                self.assertIn(f"GROUP ( {root}/usr/aarch64-linux-gnu/lib/"
                              f"libc.so.6 AS_NEEDED ({root}/usr/x/", f.read())
            self.assertEqual(os.readlink(os.path.join(lib, "libc6.so")),
                             root + "/usr/aarch64-linux-gnu/lib/libc.so.6")
            self.assertEqual(os.readlink(os.path.join(lib, "other")),
                             "/etc/nowhere")


class Build(unittest.TestCase):
    def test_command_lines(self) -> None:
        p = cross.Paths("/b")
        m = cross.make_module("/r", p, "6.1.0-56")
        self.assertIn("KVER=6.1.0-56-arm64", m)
        self.assertIn("KDIR=/b/arm64/headers/6.1.0-56/usr/src/"
                      "linux-headers-6.1.0-56-arm64", m)
        self.assertIn("CROSS_COMPILE=aarch64-linux-gnu-", m)
        t = cross.make_tools("/r", p)
        self.assertIn("BUILD=/b/arm64", t)
        self.assertIn("WERROR=1", t)
        lib = "/b/arm64/sysroot/usr/lib/aarch64-linux-gnu"
        self.assertIn(f"LDFLAGS=-L{lib} -Wl,-rpath-link={lib}", t)

    def test_selftests_command_line(self) -> None:
        p = cross.Paths("/b")
        m = cross.make_selftests("/r", p)
        self.assertEqual(m[:6], ["make", "--no-print-directory", "-C", "/r",
                                 "selftests", "BUILD=/b/arm64"])
        self.assertNotIn("tools", m)
        sr = "/b/arm64/sysroot/usr"
        self.assertIn(f"CROSS_FLAGS=-isystem {sr}/include -isystem "
                      f"{sr}/include/aarch64-linux-gnu "
                      f"-L{sr}/lib/aarch64-linux-gnu", m)

    def test_klog_modules_in_load_order(self) -> None:
        with tempfile.TemporaryDirectory() as d:
            p = cross.Paths(d)
            mods = os.path.join(cross.kernel_dir(p, "6.1.0-56-arm64"),
                                "modules")
            os.makedirs(mods)
            for n in ("1-virtio_console.ko", "0-virtio_mmio.ko"):
                open(os.path.join(mods, n), "w").close()
            self.assertEqual(
                [os.path.basename(m) for m in
                 cross.klog_modules(p, "6.1.0-56-arm64")],
                ["0-virtio_mmio.ko", "1-virtio_console.ko"])

    def test_elf_machine(self) -> None:
        with tempfile.TemporaryDirectory() as d:
            arm, x86, txt = (os.path.join(d, n) for n in ("a", "x", "t"))
            head = b"\x7fELF\x02\x01\x01" + bytes(9) + b"\x02\x00"
            with open(arm, "wb") as f:
                f.write(head + (183).to_bytes(2, "little") + bytes(40))
            with open(x86, "wb") as f:
                f.write(head + (62).to_bytes(2, "little") + bytes(40))
            with open(txt, "w") as f:
                f.write("#!/bin/sh\n")
            self.assertEqual(cross.not_arm64([arm, x86, txt]), [x86, txt])


if __name__ == "__main__":
    unittest.main()
