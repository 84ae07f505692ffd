# SPDX-License-Identifier: GPL-2.0
"""rig.klog: the guest's kernel log scan on captured logs (tests/data/
klog-*.log, as refcnt-vm --log writes them: the console, then the guest's
dmesg), with and without reports."""
from __future__ import annotations

import os
import unittest
from typing import List, Optional, Tuple

from rig import klog

DATA = os.path.join(os.path.dirname(__file__), "data")
NONCE = "00c0ffee00c0ffee"
PASS_NONCE = "fb759186b782a140"
DMESG = "===== refcnt-vm: guest dmesg =====\n"


def load(name: str) -> Tuple[str, str]:
    with open(os.path.join(DATA, f"klog-{name}.log")) as f:
        serial, _, dmesg = f.read().partition(DMESG)
    return serial, dmesg


def scan(name: str, qrc: int = 0, nonce: str = NONCE,
         qemu_err: str = "") -> Tuple[Optional[klog.Marker], List[str]]:
    serial, dmesg = load(name)
    o = klog.Outcome(qrc, qemu_err, serial, dmesg, "900", "granularity=3")
    marker = klog.find_marker(serial, nonce)
    return marker, klog.reasons(o, marker)


class Scan(unittest.TestCase):
    def test_pass(self) -> None:
        marker, why = scan("pass", nonce=PASS_NONCE)
        # O and E (out-of-tree, unsigned: 12288) are expected; "BUG:" in
        # a test's own output is not a kernel line.
        self.assertEqual(marker, klog.Marker("0", "12288", "command", 0))
        self.assertEqual(why, [])

    def test_other_nonce_is_no_marker(self) -> None:
        marker, why = scan("pass", qrc=0)
        self.assertIsNone(marker)
        self.assertEqual(why, ["the guest stopped before the command "
                               "finished (crash or panic; QEMU exit 0)"])

    def test_oops(self) -> None:
        marker, why = scan("oops")
        self.assertIsNone(marker)
        self.assertEqual(why[0], "the guest kernel reported:")
        self.assertEqual(why[1], "    [   31.502118] BUG: kernel NULL "
                         "pointer dereference, address: 0000000000000008")
        self.assertIn("    [   31.503512] Oops: 0000 [#1] PREEMPT SMP NOPTI",
                      why)
        self.assertIn("    [   31.510771] Kernel panic - not syncing: Fatal "
                      "exception", why)
        self.assertEqual(len(why), 1 + 4 + 1)
        self.assertTrue(why[-1].startswith("the guest stopped"))

    def test_warning(self) -> None:
        _, why = scan("warning")
        self.assertIn("WARNING: CPU: 0 PID: 415 at kmod/node.c:212", why[1])
        self.assertEqual(len(why), 1 + 3 + 1)

    def test_kasan_in_dmesg(self) -> None:
        marker, why = scan("kasan")
        self.assertIsNotNone(marker)
        self.assertEqual(why[1], "    [   61.300222] BUG: KASAN: "
                         "slab-use-after-free in refcnt_sets_fold+0x1d2/"
                         "0x2f0 [refcnt]")
        # Taint B (bad page, 32) with O and E.
        self.assertEqual(why[-1], "the guest kernel is tainted (12320: "
                         "warning, oops, bad page, lockup or machine check)")

    def test_lockdep(self) -> None:
        _, why = scan("lockdep")
        self.assertEqual(
            why, ["the guest kernel reported:",
                  "    [   50.101100] WARNING: possible circular locking "
                  "dependency detected",
                  "    [   50.102600] Call Trace:",
                  "    [   50.109000] INFO: lockdep is turned off."])

    def test_kcsan_only_refcnt_fails(self) -> None:
        serial, dmesg = load("kcsan")
        lines = klog.split_lines(serial) + klog.split_lines(dmesg)
        self.assertEqual(klog.kcsan_reports(lines, False), [
            "BUG: KCSAN: data-race in tick_nohz_idle_stop_tick / "
            "tick_sched_do_timer"])
        _, why = scan("kcsan")
        self.assertEqual(why, ["the guest kernel reported:",
                               "    BUG: KCSAN: data-race in "
                               "refcnt_counter_add / refcnt_counter_read"])

    def test_kcsan_race_in_the_kernel_under_refcnt(self) -> None:
        # 6.1's KCSAN guest, 2026-11-29: rmap against vm_insert_page(),
        # refcnt below both in their stacks; the race is the kernel's.
        with open(os.path.join(DATA, "klog-kcsan-mm.txt")) as f:
            lines = klog.split_lines(f.read())
        head = ("BUG: KCSAN: data-race in page_remove_rmap / "
                "validate_page_before_insert")
        self.assertEqual(klog.kcsan_reports(lines, True), [])
        self.assertEqual(klog.kcsan_reports(lines, False), [head])
        self.assertEqual(klog.bad_lines(lines), [])
        # The boot's line naming KCSAN's mode is no report.
        self.assertEqual(klog.bad_lines([
            "[    0.328668] kcsan: non-strict mode configured - use "
            "CONFIG_KCSAN_STRICT=y to see all data races"]), [])

    def test_timeout(self) -> None:
        marker, why = scan("timeout", qrc=124)
        self.assertIsNone(marker)
        self.assertEqual(why, ["timeout: no exit marker after 900s (guest "
                               "hung or too slow)"])

    def test_qemu_error(self) -> None:
        _, why = scan("timeout", qrc=1, qemu_err="qemu: bad -numa\nmore\n")
        self.assertEqual(why, ["QEMU failed (exit 1): qemu: bad -numa\nmore"])
        _, why = scan("timeout", qrc=1, qemu_err="x\nrefcnt-truth: no RAM\n")
        self.assertEqual(why, ["refcnt-truth: no RAM"])

    def test_tainted_marker_after_kernel_text(self) -> None:
        marker, why = scan("tainted")
        self.assertEqual(marker, klog.Marker("0", "12800", "command", 0))
        self.assertEqual(why, ["the guest kernel is tainted (12800: "
                               "warning, oops, bad page, lockup or machine "
                               "check)"])

    def test_insmod(self) -> None:
        marker, why = scan("insmod")
        self.assertEqual(marker, klog.Marker("125", "12288", "insmod", 0))
        self.assertEqual(why, [
            "refcnt.ko failed to load in the guest (insmod granularity=3):",
            "    insmod: can't insert '/refcnt/refcnt.ko': Invalid argument",
            "    [    9.102000] refcnt: granularity=3: not a power of two "
            "from 4096"])

    def test_kmemleak(self) -> None:
        _, why = scan("kmemleak")
        self.assertEqual(why, ["kmemleak: 2 unreferenced objects after the "
                               "command (listed in the log after "
                               "\"refcnt-vm: kmemleak:\")"])
