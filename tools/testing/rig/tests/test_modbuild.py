# SPDX-License-Identifier: GPL-2.0
"""rig.modbuild: the DKMS tree's version and dkms.conf, the kernel tree's
Kconfig and Makefile edits, the build's warnings."""
from __future__ import annotations

import os
import tempfile
import unittest

from rig import modbuild as mb

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__),
                                    "../../../.."))


class Dkms(unittest.TestCase):
    def test_changelog_version(self) -> None:
        self.assertEqual(mb.changelog_version(
            "refcnt (1.3.0-1) bookworm; urgency=medium\n\n  * (x)\n"),
            "1.3.0-1")
        self.assertEqual(mb.changelog_version("no version\n(1.0)\n"), "")

    def test_conf(self) -> None:
        self.assertEqual(mb.dkms_conf('V="#MODULE_VERSION#"\n#x\n', "1.2"),
                         'V="1.2"\n#x\n')

    def test_tree(self) -> None:
        with tempfile.TemporaryDirectory() as d:
            ver = mb.dkms_tree(ROOT, d)
            src = os.path.join(d, "src", f"refcnt-{ver}")
            self.assertTrue(os.path.isfile(f"{src}/kmod/Kbuild"))
            self.assertTrue(os.path.isfile(f"{src}/uapi/linux/refcnt.h"))
            with open(f"{src}/dkms.conf") as f:
                conf = f.read()
            self.assertIn(f'PACKAGE_VERSION="{ver}"', conf)
            self.assertNotIn("#MODULE_VERSION#", conf)


KCONFIG = """menu "Misc devices"
config A
\ttristate "a"
source "drivers/misc/x/Kconfig"
endmenu
"""


class InTree(unittest.TestCase):
    def test_kconfig_sourced_once(self) -> None:
        once = mb.kconfig_with_source(KCONFIG)
        self.assertEqual(once, KCONFIG.replace(
            "endmenu", 'source "drivers/misc/refcnt/Kconfig"\nendmenu'))
        self.assertEqual(mb.kconfig_with_source(once), once)

    def test_makefile_once(self) -> None:
        once = mb.makefile_with_obj("obj-y += x/\n")
        self.assertEqual(once,
                         "obj-y += x/\nobj-$(CONFIG_REFCNT) += refcnt/\n")
        self.assertEqual(mb.makefile_with_obj(once), once)

    def test_warnings(self) -> None:
        log = ("  CC [M]  drivers/misc/refcnt/core.o\n"
               "drivers/misc/refcnt/core.c:3:1: warning: no previous\n"
               "ld: error: x\n  LD [M]  refcnt.ko\n")
        self.assertEqual(mb.warnings(log), [
            "drivers/misc/refcnt/core.c:3:1: warning: no previous",
            "ld: error: x"])

    def test_tail(self) -> None:
        with tempfile.NamedTemporaryFile("w") as f:
            self.assertEqual(mb.tail(f.name, 2), "")
            f.write("1\n2\n3\n")
            f.flush()
            self.assertEqual(mb.tail(f.name, 2), "2\n3\n")
