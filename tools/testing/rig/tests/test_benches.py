# SPDX-License-Identifier: GPL-2.0
"""rig.hubbench and rig.tracebench: the boots' options, and the figures
read from captured logs, as the results files have them."""
from __future__ import annotations

import unittest

from rig import hostcmd as H
from rig import hubbench as hb
from rig import tracebench as tb

P1 = ["hub-job: 4.25 s",
      "hub-rate: rate 100000 delivered 100000 overruns 0",
      "hub-rate: rate 1000000 delivered 990000 overruns 0",
      "hub-rate: rate 4000000 delivered 1200000 overruns 31",
      "hub-rate: records 2000 of 4 rings"]
P64 = ["hub-job: 2.50 s", "hub-rate: rate 100000 delivered 1562 overruns 3"]


class HubBench(unittest.TestCase):
    def test_boots(self) -> None:
        self.assertEqual(hb.boot_args("off", "/w"), [])
        self.assertEqual(hb.boot_args("p64", "/w"),
                         ["--hub=64", "--hub-opt", "hub_out=/w/p64.out"])
        self.assertEqual(hb.command("off"), hb.JOB)
        self.assertTrue(hb.command("p1").endswith(" s\"; ./hub-rate"))

    def test_report(self) -> None:
        out = ["ring 0 muted_insns 300000 records 1000",
               "ring 1 muted_insns 100000"]
        self.assertEqual(hb.report("6.1", [["hub-job: 2.00 s"], P1, P64],
                                   [out, []]), [
            "=== hub device (QEMU TCG, four nodes, 6.1) ===",
            "                                        no device       period 1"
            "      period 64",
            "md5sum 32 MiB in the guest (s)               2.00           4.25"
            "           2.50",
            "highest rate without overrun (/s)               -        1000000"
            "           none",
            "guest insns per drained record                  -            200"
            "              ?",
            "rates (references made a second by one program; delivered; "
            "overruns):",
            "  period 1:  hub-rate: rate 100000 delivered 100000 overruns 0",
            "  period 1:  hub-rate: rate 1000000 delivered 990000 overruns 0",
            "  period 1:  hub-rate: rate 4000000 delivered 1200000 overruns 31",
            "  period 64: hub-rate: rate 100000 delivered 1562 overruns 3",
            "goals: the period-64 feed delivers a busy program's references "
            "without",
            "overrun (>= 1000000/s), at < 2x the guest's wall time without "
            "the device."])


class TraceBench(unittest.TestCase):
    def test_settings(self) -> None:
        self.assertEqual(tb.setting_opts("off", "/t"), [])
        self.assertEqual(tb.setting_opts("zstd", "/t"),
                         ["--trace", "/t", "--truth-opt",
                          "trace_compress=zstd"])
        self.assertEqual(tb.setting_opts("code", "/t"),
                         ["--trace", "/t", "--truth-opt", "trace_code=on"])
        with self.assertRaisesRegex(H.Die, "unknown setting 'lz4'"):
            tb.setting_opts("lz4", "/t")

    def test_rows(self) -> None:
        self.assertEqual(tb.fmt_row(tb.HEADER),
                         "setting     window_ms         refs       ns/ref "
                         "  extra_ns/ref          bytes      MB/Mref")
        self.assertEqual(tb.host_row("zstd", "3.2", "4.0", 30000000),
                         "host-zstd            -     20000000          3.2 "
                         "         (4.0)       30000000         1.50")
        self.assertEqual(tb.guest_row("off", 6e8, 12000000, 0, 6e8),
                         "off             600.0     12000000         50.0 "
                         "             -              0            -")
        self.assertEqual(tb.guest_row("gzip", 9e8, 12000000, 6000000, 6e8),
                         "gzip            900.0     12000000         75.0 "
                         "          25.0        6000000         0.50")

    def test_figures(self) -> None:
        self.assertEqual(tb.window_ns(["trace-pattern: X 1 2 ns 500",
                                       "trace-pattern: X 1 2 ns 600",
                                       "other 7"]), 600)
        self.assertEqual(tb.summary_refs([
            "refs node 0 local 10 remote 5", "refs node 1 local 1 remote 2",
            "vcpu 0 insns 9"]), 18)
