# SPDX-License-Identifier: GPL-2.0
"""rig.guestlibs: ldd's output to refcnt-vm --file arguments."""
from __future__ import annotations

import contextlib
import io
import os
import struct
import tempfile
import unittest

from rig import guestlibs

LDD = """\
\tlinux-vdso.so.1 (0x00007ffd6b5f2000)
\tlibm.so.6 => /lib/x86_64-linux-gnu/libm.so.6 (0x00007f0a1c4f6000)
\tlibgone.so.1 => not found
\tlibc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x00007f0a1c315000)
\t/lib64/ld-linux-x86-64.so.2 (0x00007f0a1c744000)
"""


class GuestLibs(unittest.TestCase):
    def test_ldd_paths(self) -> None:
        self.assertEqual(guestlibs.parse_ldd(LDD), [
            "/lib/x86_64-linux-gnu/libm.so.6",
            "/lib/x86_64-linux-gnu/libc.so.6",
            "/lib64/ld-linux-x86-64.so.2"])

    def test_static_program_has_none(self) -> None:
        self.assertEqual(guestlibs.parse_ldd("\tnot a dynamic executable\n"),
                         [])

    def test_arguments_sorted_existing_only(self) -> None:
        with tempfile.TemporaryDirectory() as d:
            a, b = os.path.join(d, "liba.so"), os.path.join(d, "libB.so")
            for p in (a, b):
                open(p, "w").close()
            self.assertEqual(
                guestlibs.file_args({a, b, os.path.join(d, "gone.so")}),
                ["--file", f"{b}:{b}", "--file", f"{a}:{a}"])

    def test_dynamic_programs_only(self) -> None:
        with tempfile.TemporaryDirectory() as d:
            elf = os.path.join(d, "elf")
            # An ELF64 header with one program header, PT_INTERP or PT_LOAD.
            hdr = bytearray(64)
            hdr[:6] = b"\x7fELF\x02\x01"
            struct.pack_into("<Q", hdr, 0x20, 64)
            struct.pack_into("<HH", hdr, 0x36, 56, 1)
            for p_type, dynamic in ((3, True), (1, False)):
                with open(elf, "wb") as f:
                    f.write(hdr + struct.pack("<I", p_type) + bytes(52))
                self.assertEqual(guestlibs.is_dynamic_program(elf), dynamic)
            with open(elf, "wb") as f:
                f.write(b"#!/bin/sh\n")
            self.assertFalse(guestlibs.is_dynamic_program(elf))
            self.assertFalse(guestlibs.is_dynamic_program(os.path.join(d, "gone")))
            self.assertEqual(guestlibs.dir_file_args(os.path.join(d, "none")), [])

    def test_usage(self) -> None:
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            self.assertEqual(guestlibs.main([]), 2)
        self.assertEqual(err.getvalue(), "usage: guest-libs PROGRAM...\n")
