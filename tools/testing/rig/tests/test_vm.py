# SPDX-License-Identifier: GPL-2.0
"""rig.vmargs and rig.guest: refcnt-vm's options and the guest's files."""
from __future__ import annotations

import unittest
from typing import List

from rig import guest, qemu, topology, vm, vmargs
from rig.msg import Error
from rig.vmargs import Vm


def parsed(argv: List[str]) -> Vm:
    v = Vm(build="/nonexistent")
    vm.options(v, argv)
    return v


class Options(unittest.TestCase):
    def test_command_and_flags(self) -> None:
        v = parsed(["--topology", "one", "--hub=8", "--no-debug", "--append",
                    "a=1", "--dimm", "0:128M", "--", "./t", "a b"])
        self.assertEqual(v.cmd, ["./t", "a b"])
        self.assertEqual(v.hub_period, "8")
        self.assertEqual(v.append, vmargs.BASE_APPEND +
                         " a=1 memhp_default_state=offline")
        v = parsed(["--debian-systemd", "--mask", "pmcd.service", "echo"])
        self.assertTrue(v.debian)
        self.assertEqual(v.cmd, ["echo"])

    def test_errors(self) -> None:
        for argv, msg in (
                (["--kernel"], "option --kernel needs an argument"),
                (["--bogus"], "unknown option '--bogus' (see --help)"),
                (["--timeout", "0"], "--timeout: '0' is not a positive"),
                (["--accel", "x"], "--accel: 'x' is not kvm, tcg or auto"),
                (["--modparams", "a=1"], "--modparams given without"),
                (["--trace", "t"], "need --truth FILE"),
                (["--truth-llc", "1M"], "--truth-llc needs --truth FILE"),
                (["--hub=0"], "--hub=0: the period is a number"),
                (["--hub-opt", "a=b"], "--hub-opt needs --hub"),
                (["--mask", "a.service"], "--mask needs --debian-systemd"),
                (["--debian-systemd", "--mask", "a"], "not a systemd unit"),
                (["--hotplug-mem", "1X"], "--hotplug-mem: bad size '1X'"),
                (["--icount", "11"], "--icount: '11' is not a shift from 0"),
                (["--icount", "0", "--accel", "kvm"], "--icount needs TCG")):
            with self.subTest(argv=argv):
                with self.assertRaises(Error) as e:
                    parsed(argv)
                self.assertIn(msg, str(e.exception))


class IcountSmp(unittest.TestCase):
    def vm(self, topo: str, kver: str) -> Vm:
        v = parsed(["--icount", "0", "--topology", topo, "true"])
        v.kver = kver
        return v

    def test_one_cpu_as_given(self) -> None:
        v = self.vm("512M/1,512M/0", "6.1.0-56-amd64")
        vm.icount_smp(v)
        self.assertNotIn("tsc=unstable", v.append)

    def test_6_12_skips_the_tsc_sync_check(self) -> None:
        v = self.vm("tiered", "6.12.95+deb12-amd64")
        vm.icount_smp(v)
        self.assertTrue(v.append.endswith(" tsc=unstable"))

    def test_6_1_refused(self) -> None:
        v = self.vm("tiered", "6.1.0-56-amd64")
        with self.assertRaises(Error) as e:
            vm.icount_smp(v)
        self.assertIn("--icount: the topology has 2 CPUs and kernel "
                      "6.1.0-56-amd64 hangs", str(e.exception))


class CommandLine(unittest.TestCase):
    def vm(self, argv: List[str]) -> Vm:
        v = parsed(argv)
        v.topo = topology.parse(v.topology)
        v.vmlinuz, v.pvh, v.tmp = "/boot/vmlinuz", False, "/tmp/x"
        return v

    def test_multithreaded_tcg_by_default(self) -> None:
        v = self.vm(["--accel", "tcg", "true"])
        qemu.choose_accel(v, "refcnt-vm")
        self.assertEqual(qemu.args(v)[:2], ["-accel", "tcg,thread=multi"])

    def test_icount_is_single_threaded_tcg(self) -> None:
        v = self.vm(["--icount", "0", "--topology", "512M/1,512M/0", "true"])
        qemu.choose_accel(v, "refcnt-vm")
        self.assertEqual(v.accel, "tcg")
        self.assertEqual(qemu.args(v)[:4], ["-accel", "tcg,thread=single",
                                            "-icount", "shift=0,sleep=off"])


class Guest(unittest.TestCase):
    def test_shell_join(self) -> None:
        self.assertEqual(guest.shell_join(["echo $HOME; ls"]),
                         "echo $HOME; ls")
        self.assertEqual(guest.shell_join(["./t", "a b", "it's"]),
                         "'./t' 'a b' 'it'\\''s'")

    def test_debian_stage_two(self) -> None:
        init = guest.guest_file("init")
        two = guest.stage_two(init, False).split("\n")
        self.assertEqual(two[0], "#!/.refcnt-vm/busybox sh")
        self.assertIn("mountpoint -q /dev || mount -t devtmpfs devtmpfs "
                      "/dev", two)
        self.assertTrue(any("REFCNT_VM=1 REFCNT_VM_DEBIAN=1 /bin/sh -c" in x
                            for x in two))
        self.assertTrue(any(x.startswith("export PATH=/usr/local/sbin:")
                            for x in two))
        sd = guest.stage_two(init, True).split("\n")
        self.assertFalse(any(x.endswith("sched-pin") for x in sd))
        self.assertIn("mountpoint -q /sys/kernel/debug || mount -t debugfs "
                      "debugfs /sys/kernel/debug 2>/dev/null", sd)
        self.assertIn("mountpoint -q /dev/shm || mount -t tmpfs -o "
                      "mode=1777 tmpfs /dev/shm", sd)
