# SPDX-License-Identifier: GPL-2.0
"""rig.papibuild: when PAPI is configured again, the component's
warnings in make's log, what a static link says that is dropped, and the
programs built against PAPI."""
from __future__ import annotations

import os
import tempfile
import unittest

from rig import papibuild as pb

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__),
                                    "../../../.."))


class Configure(unittest.TestCase):
    def test_stamp(self) -> None:
        conf = pb.configure_args("/usr/lib/x86_64-linux-gnu")
        self.assertIn("--with-components=refcnt", conf)
        with tempfile.TemporaryDirectory() as d:
            self.assertTrue(pb.needs_configure(d, conf))
            open(os.path.join(d, "Makefile"), "w").close()
            self.assertTrue(pb.needs_configure(d, conf))
            with open(os.path.join(d, ".refcnt-configured"), "w") as f:
                f.write(" ".join(conf) + "\n")
            self.assertFalse(pb.needs_configure(d, conf))
            self.assertTrue(pb.needs_configure(d, conf[:-1]))


class Logs(unittest.TestCase):
    def test_component_warnings(self) -> None:
        log = ("gcc -c components/refcnt/refcnt.c\n"
               "components/refcnt/refcnt.c:12:3: warning: unused x\n"
               "papi.c:1: warning: not ours\n"
               "components/refcnt/refcnt.c:40: error: bad\n")
        self.assertEqual(pb.component_warnings(log), [
            "2:components/refcnt/refcnt.c:12:3: warning: unused x",
            "4:components/refcnt/refcnt.c:40: error: bad"])

    def test_link_noise(self) -> None:
        self.assertTrue(pb.link_noise(
            "(.text+0x7b5): warning: Using 'getaddrinfo' in statically"))
        self.assertTrue(pb.link_noise(
            "libnuma.a(affinity.o): in function `affinity_ip':"))
        self.assertFalse(pb.link_noise("x.c:1: error: y"))


class Programs(unittest.TestCase):
    def test_examples_twice_and_the_kselftest(self) -> None:
        p = pb.Paths(ROOT, "/b", "/usr/lib/x", "/b/papi/papi-7/src")
        progs = dict(pb.programs(p))
        examples = sorted(f[:-2] for f in
                          os.listdir(os.path.join(ROOT, "examples/papi"))
                          if f.endswith(".c"))
        self.assertEqual(sorted(progs), sorted(
            examples + [e + "-truth" for e in examples] + ["papi_test"]))
        for e in examples:
            self.assertIn("-Wl,--wrap=refcnt_count_open,--wrap=ioctl",
                          progs[e + "-truth"])
        self.assertIn("-I/b/linux-source/tools/testing/selftests",
                      progs["papi_test"])
        cmd = pb.compile_cmd(p, "gcc", "x", ["x.c"])
        self.assertEqual(cmd[-7:], [
            "/b/papi/papi-7/src/libpapi.a", "/b/lib/librefcnt.a", "-lnuma",
            "-pthread", "-L/usr/lib/x", "-lpfm", "-static"])
        self.assertIn("-O0", cmd)
