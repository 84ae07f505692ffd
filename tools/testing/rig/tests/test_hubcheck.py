# SPDX-License-Identifier: GPL-2.0
"""rig.hubcheck: options, the guests' commands and refcnt-vm arguments,
the results taken from a guest's log, the exact windows against the
truth's dumps."""
from __future__ import annotations

import os
import tempfile
import unittest

from rig import hostcmd as H
from rig import hubcheck as hc


class Options(unittest.TestCase):
    def test_defaults(self) -> None:
        o = hc.parse_args([], "/b")
        self.assertEqual((o.topologies, o.log_dir, o.timeout, o.reloads),
                         (["four", "72"], "/b/logs", "900", None))

    def test_values(self) -> None:
        o = hc.parse_args(["--topologies", "four", "--vm-arg", "--no-debug",
                           "--vm-arg", "--x", "--tests", "exact real_rates",
                           "--reloads", "3"], "/b")
        self.assertEqual(o.vm_args, ["--no-debug", "--x"])
        self.assertEqual((o.tests, o.reloads), (["exact", "real_rates"], 3))

    def test_bad(self) -> None:
        with self.assertRaisesRegex(H.Die, "want a number of loads"):
            hc.parse_args(["--reloads", "0"], "/b")
        with self.assertRaisesRegex(H.Die, "'Exact' is not a test name"):
            hc.parse_args(["--tests", "Exact"], "/b")


class Commands(unittest.TestCase):
    def test_all_tests(self) -> None:
        p = hc.plan([])
        self.assertEqual(hc.guest_command("PRE; ", p, True, 20),
                         "PRE; ./refcntd_pmu_test; "
                         "HUB_GARBLE=1 HUB_RELOADS=20 ./hub_test")
        self.assertEqual(hc.guest_command("PRE; ", p, False, 3),
                         "HUB_GARBLE=1 HUB_RELOADS=3 ./hub_test")
        self.assertTrue(hc.wants_truth("four", [], p))
        self.assertFalse(hc.wants_truth("72", [], p))

    def test_named_tests(self) -> None:
        p = hc.plan(["real_rates", "host_garbage"])
        self.assertEqual(hc.guest_command("", p, True, hc.reloads("four", 3)),
                         "HUB_GARBLE=1 HUB_RELOADS=3 ./hub_test"
                         " -t real_rates -t host_garbage")
        self.assertFalse(hc.wants_truth("four", ["real_rates"], p))
        self.assertTrue(hc.wants_truth("four", ["pmu_session"],
                                       hc.plan(["pmu_session"])))
        only = hc.plan(["refcntd_pmu"])
        self.assertEqual(hc.guest_command("", only, True, 20),
                         "./refcntd_pmu_test; ")
        self.assertFalse(hc.wants_truth("four", ["refcntd_pmu"], only))

    def test_reloads(self) -> None:
        self.assertEqual([hc.reloads("four", None), hc.reloads("72", None),
                          hc.reloads("72", 5)], [20, 3, 5])

    def test_vm_args(self) -> None:
        self.assertEqual(
            hc.vm_args("k", "four", "/b/k/refcnt.ko", "/dev/shm/h", "900",
                       "/l", ["--no-debug"], "/b", "/w", "/w/t.csv"),
            ["--kernel", "k", "--topology", "four", "--module",
             "/b/k/refcnt.ko", "--hub", "--hub-file", "/dev/shm/h",
             "--timeout", "900", "--quiet", "--log", "/l", "--no-debug",
             "--file", "/b/selftests/hub_test:/refcnt/hub_test",
             "--file", "/b/selftests/refcntd_pmu_test:"
             "/refcnt/refcntd_pmu_test",
             "--file", "/b/tools/refcntd:/refcnt/tools/refcntd",
             "--qemu-arg", "-object", "--qemu-arg",
             "memory-backend-file,id=foreign,share=on,mem-path=/w/foreign,"
             "size=1M", "--qemu-arg", "-device", "--qemu-arg",
             "ivshmem-plain,memdev=foreign", "--truth", "/w/t.csv",
             "--truth-window", "--truth-llc", "16K:16"])


LOG = """\
[    3.1] refcnt: loaded
#  RUN           refcntd_pmu.samples ...
#            OK  refcntd_pmu.samples
ok 1 refcntd_pmu.samples
#  RUN           hub.real_rates ...
hub-rates: 1000 2000
ok 1 hub.real_rates
#  RUN           hub.exact ...
not ok 2 hub.exact  # what went wrong
#  RUN           hub.granularity_256 ...
ok 3 # SKIP no PEBS here
hub-garbage: 7 records
""".split("\n")


class Log(unittest.TestCase):
    def test_results(self) -> None:
        self.assertEqual(hc.results(LOG, "four"), [
            (True, "refcntd_pmu.samples four"),
            (True, "hub.real_rates four"),
            (False, "hub.exact four  # what went wrong"),
            (True, "hub.granularity_256 four # SKIP no PEBS here")])

    def test_notes(self) -> None:
        self.assertEqual(hc.notes(LOG), ["hub-rates: 1000 2000",
                                         "hub-garbage: 7 records"])


def dump(path: str, rows: str) -> None:
    with open(path, "w") as f:
        f.write("set,paddr,node,cnodeid,refs,n0,n1,n2,n3,lost\n" + rows)


class Truth(unittest.TestCase):
    """Two windows: a pair's (every reference) and a PMU round's (the
    LLC model's misses); nodes 0-3, two nodes per counter."""

    def setUp(self) -> None:
        self.d = tempfile.TemporaryDirectory()
        self.t = os.path.join(self.d.name, "t.csv")
        # One papi-window dump comes first: the hub's are 2 and 3.
        dump(self.t + ".2", "0,0x1000,0,0,10,4,1,5,0,0\n")
        dump(self.t + ".3.llc", "0,0x2000,1,1,3,0,0,0,3,0\n")

    def tearDown(self) -> None:
        self.d.cleanup()

    def log(self, c0: int) -> list[str]:
        return ["papi-window: 1 data 0 0 instr 0 0",
                "hub-exact: node 0 memory 1",
                f"hub-exact: page 0x1000 node 0 nodes 2 counts {c0} 5",
                "hub-pmu-truth: round loads-ldlat node llc",
                "hub-pmu-truth: page 0x2000 node 1 nodes 2 counts 0 3"]

    def test_equal(self) -> None:
        self.assertEqual(hc.truth_compare(self.log(5), self.t), (True, [
            "1 pairs, 1 pages; 1 PMU rounds, 1 pages; 0 counters differ"]))

    def test_differ(self) -> None:
        self.assertEqual(hc.truth_compare(self.log(6), self.t), (False, [
            "pair 1 page 0x1000 counter 0: refcnt 6, truth 5",
            "1 pairs, 1 pages; 1 PMU rounds, 1 pages; 1 counters differ"]))

    def test_no_dump(self) -> None:
        os.unlink(self.t + ".3.llc")
        ok, out = hc.truth_compare(self.log(5), self.t)
        self.assertFalse(ok)
        self.assertEqual(out[0], f"no truth dump {self.t}.3.llc")

    def test_no_pages(self) -> None:
        self.assertEqual(hc.truth_compare([], self.t), (False, [
            "0 pairs, 0 pages; 0 PMU rounds, 0 pages; 0 counters differ"]))
