# SPDX-License-Identifier: GPL-2.0
"""rig.topology and rig.qemu: every topology preset to its QEMU arguments
(tests/data/topology-golden.txt, written by the bash refcnt-vm these
modules replace), and the --topology language."""
from __future__ import annotations

import os
import unittest
from typing import Dict, List

from rig import qemu, topology, vm
from rig.msg import Error
from rig.vmargs import Vm

DATA = os.path.join(os.path.dirname(__file__), "data")


def golden(name_: str = "topology-golden.txt") -> Dict[str, List[str]]:
    cases: Dict[str, List[str]] = {}
    name = ""
    with open(os.path.join(DATA, name_)) as f:
        for line in f.read().splitlines():
            if line.startswith("== "):
                name = line[3:]
                cases[name] = []
            else:
                cases[name].append(line)
    return cases


def args_of(spec: str) -> List[str]:
    """QEMU's arguments for "TOPOLOGY [OPTIONS]" (TCG, no PVH image)."""
    words = spec.split()
    v = Vm(build="/nonexistent", accel="tcg", pvh=False, vmlinuz="VMLINUZ",
           tmp="TMP")
    vm.options(v, ["--topology", words[0], *words[1:]])
    return qemu.args(v)


class Golden(unittest.TestCase):
    def test_every_preset(self) -> None:
        cases = golden()
        names = {c.split()[0] for c in cases}
        self.assertEqual(names, set(topology.PRESETS))
        for spec, want in cases.items():
            with self.subTest(spec=spec):
                self.assertEqual(args_of(spec), want)


class Arm64(unittest.TestCase):
    """--arch arm64: QEMU's virt machine (tests/data/
    topology-golden-arm64.txt), nodes from the device tree by id."""

    def test_golden(self) -> None:
        for spec, want in golden("topology-golden-arm64.txt").items():
            with self.subTest(spec=spec):
                self.assertEqual(args_of(spec), want)

    def test_no_placeholder_slots(self) -> None:
        t = topology.parse("four", 0, "arm64")
        self.assertEqual(t.slot_node, [0, 1, 4])
        self.assertEqual(t.slot_present, [True] * 3)
        self.assertEqual(topology.parse("four").slot_node,
                         [0, 1, 2, 3, 4, 0, 0, 0, 0])

    def test_console_and_tcg(self) -> None:
        v = Vm(build="/nonexistent")
        vm.options(v, ["--arch", "arm64"])
        self.assertEqual(v.accel, "tcg")
        self.assertTrue(v.append.startswith("console=ttyAMA0 panic=-1 "))

    def test_refused(self) -> None:
        for argv, msg in (
                (["--arch", "sparc"], "--arch: 'sparc' is not x86_64 or "
                 "arm64"),
                (["--accel", "kvm"], "--arch arm64 runs under TCG"),
                (["--hmat"], "--hmat is not supported with --arch arm64"),
                (["--hub"], "--hub is not supported with --arch arm64"),
                (["--dimm", "1:128M"], "--dimm is not supported"),
                (["--truth", "t"], "--truth is not supported")):
            with self.subTest(argv=argv):
                v = Vm(build="/nonexistent")
                with self.assertRaises(Error) as e:
                    vm.options(v, ["--arch", "arm64", *argv])
                self.assertIn(msg, str(e.exception))


class Language(unittest.TestCase):
    def test_sizes(self) -> None:
        for text, mb in (("512M", 512), ("1g", 1024), ("0", 0),
                         ("65536K", 64), ("512MiB", 512), ("2GB", 2048),
                         ("512", None), ("1000K", None), ("1T", None),
                         ("", None), ("0B", 0)):
            self.assertEqual(topology.size_mb(text), mb, text)

    def test_repeats_and_summary(self) -> None:
        t = topology.parse("2*512M/1,3*0/0,64M/2", 128)
        self.assertEqual(t.mem, [640, 512, 0, 0, 0, 64])
        self.assertEqual(topology.summary(t),
                         "640M/1,512M/1,3*0/0,64M/2")
        self.assertEqual(topology.summary(topology.parse("72")),
                         "256M/1,35*32M/0,32M/1,34*32M/0,32M/1")

    def test_placeholder_slots(self) -> None:
        t = topology.parse("four")
        self.assertEqual(t.slot_node, [0, 1, 2, 3, 4, 0, 0, 0, 0])
        self.assertEqual(t.slot_present, [True, True, False, False, True,
                                          False, False, False, False])
        # No CPU-less node before one with CPUs: no placeholders.
        t = topology.parse("tiered")
        self.assertEqual(t.slot_node, [0, 1])

    def test_errors(self) -> None:
        for spec, msg in (
                ("", "empty spec"), ("512M", "'512M' is not MEM/CPUS"),
                ("512X/1", "bad memory size '512X'"),
                ("8M/1", "node memory 8M is below 16M"),
                ("129*16M/1", "129 nodes; QEMU supports at most 128"),
                ("512M/0,512M/1", "node 0 has no CPU"),
                ("0*512M/1", "node 0 has no CPU"),
                ("0/1,0/1", "no node has memory"),
                ("512M/1,,0/1", "'' is not MEM/CPUS")):
            with self.subTest(spec=spec):
                with self.assertRaises(Error) as e:
                    topology.parse(spec)
                self.assertIn(msg, str(e.exception))

    def test_dimms(self) -> None:
        t = topology.parse("cxl")
        self.assertEqual(topology.parse_dimm("2:256M", t),
                         topology.Dimm(2, 256))
        for bad, msg in (("x", "not NODE:SIZE"), ("3:256M", "nodes 0-2"),
                         ("1:100M", "multiple of 128M"),
                         ("1:abc", "bad size")):
            with self.assertRaises(Error) as e:
                topology.parse_dimm(bad, t)
            self.assertIn(msg, str(e.exception))

    def test_plugin_machine(self) -> None:
        t = topology.parse("four")
        self.assertEqual(
            topology.plugin_machine(t, "granularity=16384 x=1"),
            "online=0:1:3:4,vcpus=0:1:2:3:4:0:0:0:0,granularity=16384,"
            "ram=0:512,ram=1:512,ram=3:256")
