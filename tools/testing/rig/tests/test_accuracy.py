# SPDX-License-Identifier: GPL-2.0
"""rig.accuracy (make accuracy): the guest's script, refcnt-vm's command
line, the runs taken out of a guest's log, the rows of scores and the
goal, against golden outputs of the bash refcnt-accuracy (run with a
stand-in refcnt-vm that played back accuracy-guest.log: a run cut short,
one whose tables do not decode, kernel lines and carriage returns)."""
from __future__ import annotations

import os
import shutil
import tempfile
import unittest
from unittest import mock

from rig import accuracy as A
from rig import guestout as G

DATA = os.path.join(os.path.dirname(__file__), "data")
ENV = {"REFCNT_ACCURACY_WORKLOADS": "demo stream",
       "REFCNT_ACCURACY_FEEDS": "hub-64 pebs-1000",
       "REFCNT_ACCURACY_FEEDS_demo": "pebs-1000 ibs-1008",
       "REFCNT_ACCURACY_SECONDS": "9", "REFCNT_ACCURACY_REDIS_REQUESTS": "5",
       "REFCNT_ACCURACY_TIMEOUT": "60", "REFCNT_ACCURACY_CONTROL": "0"}


def read(name: str) -> str:
    with open(os.path.join(DATA, name), newline="") as f:
        return f.read()


K612 = "6.12.95+deb12-amd64"


class Accuracy(unittest.TestCase):
    def test_settings(self) -> None:
        c = A.Config.from_env(ENV)
        self.assertEqual(c.feeds_of("demo"), ["pebs-1000", "ibs-1008"])
        self.assertEqual(c.feeds_of("stream"), ["hub-64", "pebs-1000"])
        self.assertFalse(c.control)
        self.assertEqual(c.command()[3:], [
            "REFCNT_ACCURACY_FEEDS_demo='pebs-1000 ibs-1008'",
            "REFCNT_ACCURACY_LLC=1M:16", "REFCNT_ACCURACY_ICOUNT=0", ""])
        d = A.Config.from_env({})
        self.assertEqual(len(d.feeds_of("demo")), 16)
        for env, msg in (({"REFCNT_ACCURACY_IMPORT": "x"},
                          "needs REFCNT_ACCURACY_RESUME=1"),
                         ({"REFCNT_ACCURACY_RESUME": "1",
                           "REFCNT_ACCURACY_IMPORT": "/nonexistent"},
                          "neither a run directory"),
                         ({"REFCNT_ACCURACY_TIMEOUT": "0"},
                          "seconds expected, not '0'"),
                         ({"REFCNT_ACCURACY_ICOUNT": "11"},
                          "'11' is not a shift from 0 to 10, nor off")):
            with self.assertRaises(G.Die) as e:
                A.Config.from_env(env).check()
            self.assertIn(msg, str(e.exception))

    def test_long_settings(self) -> None:
        """REFCNT_ACCURACY_LONG=1: its own defaults, which the other
        variables still override, its own directory and command line."""
        c = A.Config.from_env({"REFCNT_ACCURACY_LONG": "1"})
        self.assertTrue(c.long)
        self.assertEqual((c.secs, c.workloads), ("120", "demo stream"))
        self.assertEqual(c.feeds_of("stream"), ["pebs-200000", "ibs-200000"])
        self.assertEqual(c.command()[:2], ["REFCNT_ACCURACY_LONG=1",
                                           "REFCNT_ACCURACY_SECONDS=120"])
        c = A.Config.from_env({"REFCNT_ACCURACY_LONG": "1",
                               "REFCNT_ACCURACY_SECONDS": "300",
                               "REFCNT_ACCURACY_FEEDS": "ibs-50000"})
        self.assertEqual((c.secs, c.feeds_of("demo")), ("300", ["ibs-50000"]))
        self.assertFalse(A.Config.from_env({"REFCNT_ACCURACY_LONG": "0"}).long)
        self.assertNotIn("REFCNT_ACCURACY_LONG=1",
                         A.Config.from_env({}).command())
        with mock.patch.dict(os.environ, {"REFCNT_BUILD_DIR": "/b"}):
            self.assertEqual(A.Accuracy("/r", c).out, "/b/accuracy-long")
            self.assertEqual(A.Accuracy("/r", A.Config()).out, "/b/accuracy")

    def test_guest(self) -> None:
        c = A.Config.from_env(ENV)
        self.assertEqual(A.guest_script(c, {"demo": c.feeds_of("demo"),
                                            "stream": c.feeds_of("stream")}),
                         # Without its #! line, which would make it a
                         # script for make shellcheck.
                         "#!/bin/sh\n" + read("accuracy-guest-sh.golden"))
        want = [a.replace("@BUILD@", "/b")
                for a in read("accuracy-vm-args.golden").split("\n")[:-1]]
        self.assertEqual(A.main_vm("/r", "/b", "/b/accuracy",
                                   "6.1.0-56-amd64", c),
                         ["/r/tools/testing/refcnt-vm"] + want)
        self.assertEqual(A.inject_script([("demo",)]).split("\n"), [
            "cd /refcnt/tools",
            "/refcnt/truth-inject /refcnt/inject/demo.csv && ./refcnt-dump "
            "--csv -o /tmp/t.csv && { echo '@@run 1 demo truth-inject'; echo "
            "'@@file tables.csv'; cat /tmp/t.csv; echo '@@end'; }",
            "echo @@done", ""])

    def test_time_driven_feeds_on_the_instruction_clock(self) -> None:
        """hinting and hinting-fast in a boot of their own on icount
        (every workload in both scripts), unless off or on 6.1."""
        todo = {"demo": ["hinting", "pebs-1000", "hinting-fast"],
                "redis": ["ibs-1008"]}
        wall, insn = A.split_by_clock(todo, "0", K612)
        self.assertEqual(wall, {"demo": ["pebs-1000"], "redis": ["ibs-1008"]})
        self.assertEqual(insn, {"demo": ["hinting", "hinting-fast"],
                                "redis": []})
        for icount, kver in (("off", K612), ("0", "6.1.0-56-amd64")):
            self.assertEqual(A.split_by_clock(todo, icount, kver),
                             (todo, {"demo": [], "redis": []}))
        c = A.Config.from_env(ENV)
        args = A.main_vm("/r", "/b", "/b/accuracy", K612, c, "0")
        self.assertEqual(args[args.index("--icount") + 1], "0")
        self.assertEqual(args[:args.index("--icount")] +
                         args[args.index("--icount") + 2:],
                         A.main_vm("/r", "/b", "/b/accuracy", K612, c))
        self.assertNotIn("--icount",
                         A.main_vm("/r", "/b", "/b/accuracy", K612, c))

    def test_collect(self) -> None:
        d = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, d)
        truth = os.path.join(d, "truth.csv")
        for n in (1, 2, 3, 4):
            with open(f"{truth}.{n}", "w") as f:
                f.write(f"truth {n}\n")
        with mock.patch.dict(os.environ, {"REFCNT_BUILD_DIR": d}):
            a = A.Accuracy(d, A.Config.from_env(ENV))
        os.makedirs(a.out)
        log = os.path.join(d, "guest.log")
        shutil.copy(os.path.join(DATA, "accuracy-guest.log"), log)
        with mock.patch("sys.stderr"):
            a.collect(log, truth, "boot of now")
        done = sorted(f for f in os.listdir(a.out) if f.endswith(".boot"))
        # Run 2's tables do not decode, run 3 has no end to its pages.
        self.assertEqual(done, ["demo.hub-64.boot", "stream.pebs-1000.boot"])
        self.assertEqual(A.cat(a.path("demo.hub-64", "truth.csv")),
                         "truth 1")
        self.assertEqual(A.cat(a.path("demo.hub-64", "out")),
                         "pmu 1000\ndemo ran\nrefcnt-run report")
        with open(os.path.join(DATA, "../../../truth/compare-data/regions")) as f:
            self.assertEqual(A.cat(a.path("stream.pebs-1000", "pages")),
                             f.read().rstrip("\n"))

    def test_row(self) -> None:
        j = read("accuracy-compare.json")
        self.assertEqual(A.row("w", "f", j, "0.5"),
                         "w        f                   99.5   96.0   97.0   "
                         "30.0/31.0    93.0/95.0   91.0/90.0    0.91 "
                         "100.0/96.0      -/-         0.5")
        self.assertTrue(A.goal_met(j, "0.5"))
        self.assertFalse(A.goal_met(j, "1.5"))
        self.assertFalse(A.goal_met(j, "-"))
        self.assertFalse(A.goal_met(j.replace('"recall": 0.96',
                                              '"recall": 0.5'), "0.5"))

    def test_sample_period(self) -> None:
        # The hub's period from its name; the PMU's as applied, else named.
        self.assertEqual(A.sample_period("hub-64", "0"), 64)
        self.assertEqual(A.sample_period("pebs-1000", "1000"), 1000)
        self.assertEqual(A.sample_period("ibs-1008", "1008 "), 1008)
        self.assertEqual(A.sample_period("pebs-ldlat-10000", ""), 10000)
        self.assertEqual(A.sample_period("ibs-mem-100000", "0"), 100000)
        # Faults are no sampled references; the control is the truth.
        for f in ("first-touch", "hinting", "hinting-fast", "truth-inject"):
            self.assertEqual(A.sample_period(f, ""), 0)

    def test_coverage(self) -> None:
        """refcnt-compare --period 20 on compare-data (its README): 4 of
        the regions' 5 pages and 2 of 3 regions inside; without regions,
        the pages overall; without --period, none."""
        j = read("accuracy-compare-period.json")
        self.assertEqual(A.coverage(j), ("0.8", "0.666667"))
        self.assertEqual(A.row("w", "hub-64", j, "0.5"),
                         "w        hub-64              90.0   65.0   65.0   "
                         "21.4/45.0    75.0/75.0  100.0/100.0   0.80     -/0.0"
                         "    80.0/66.7      0.5")
        alone = ('{"overall": {"refs": 14, "interval_pages": 5, '
                 '"interval_inside": 1, "interval_coverage": 0.2},\n'
                 ' "misplacement": {"regions": 0}}')
        self.assertEqual(A.coverage(alone), ("0.2", ""))
        self.assertEqual(A.row("w", "f", alone, "-")[-22:],
                         "    20.0/-           -")
        self.assertEqual(A.coverage(read("accuracy-compare.json")), ("", ""))

    def test_cover_goal(self) -> None:
        self.assertEqual(A.counts_truth("pebs-1000"), "all")
        self.assertEqual(A.counts_truth("hub-64"), "all")
        self.assertEqual(A.counts_truth("pebs-ldlat-1000"), "memside")
        self.assertEqual(A.counts_truth("ibs-mem-1008"), "memside")
        j = read("accuracy-compare-period.json")
        self.assertFalse(A.cover_met("hub-64", "all", j))  # 0.8
        j95 = j.replace('"interval_coverage": 0.8}', '"interval_coverage": 0.95}')
        self.assertTrue(A.cover_met("hub-64", "all", j95))
        self.assertFalse(A.cover_met("hub-64", "memside", j95))
        self.assertTrue(A.cover_met("ibs-mem-1008", "memside", j95))
        self.assertFalse(A.cover_met("pebs-1000", "all",
                                     read("accuracy-compare.json")))

    def test_tables(self) -> None:
        txt = ["x", "the hub driver's drain besides the feed", "  demo hub-64 "
               "  0.140   38 1", "  demo pebs-1000 1 2 3", "", "  demo hub-64 9"]
        self.assertEqual(A.drain_rows(txt, "demo", "hub-64"), ["0.140 38 1"])
        self.assertEqual(A.fold_runs(["demo/a", "demo/b", "stream/a",
                                      "demo/c"]),
                         ["    demo: a b", "    stream: a", "    demo: c"])

    def test_long_figures(self) -> None:
        """The long rows' instructions, samples a page and goal, worked
        out by hand on accuracy-compare-period.json (its regions: 14
        references on 4 pages touched; 4 of 5 pages and 2 of 3 regions
        inside the intervals)."""
        d = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, d)
        s = os.path.join(d, "summary")
        with open(s, "w") as f:
            f.write("# refcnt-truth summary\nwindow marked\n"
                    "vcpu 0 node 0 insns 9 insns_window 1500000000 io 0 "
                    "unmapped 0 muted_window 100000000 cost_window 9 "
                    "cost_muted 30000000 cost_calls 5 cost_open 0\n"
                    "vcpu 1 node 1 insns 9 insns_window 700000000 io 0 "
                    "unmapped 0 muted_window 0\n"
                    "refs node 0 local 1 remote 2\n")
        # 2.2e9 less the drain's 1e8, of which 3e7 were the feed's.
        self.assertEqual(A.window_insns(s), 2_130_000_000)
        j = read("accuracy-compare-period.json")
        self.assertEqual(A.density(j, 2), (7.0, 4))
        self.assertEqual(A.density(j, 0), (0.0, 4))
        alone = '{"overall": {"refs": 30, "true_pages": 6}}'
        self.assertEqual(A.density(alone, 10), (3.0, 6))
        self.assertEqual(A.long_row("stream", "pebs-2", 2_130_000_000, j, j,
                                    2, "0.612"),
                         "stream   pebs-2            2.13e+09    0.71"
                         "         7       4    1.75  80.0/66.7    0.612")
        self.assertEqual(A.long_row("demo", "first-touch", None, j, "", 0,
                                    "0.1"),
                         "demo     first-touch              -       -"
                         "         -       4       -     -/-         0.1")
        self.assertEqual(A.LONG_HDR.split(), [
            "workload", "feed", "insns", "3GHz-s", "samples", "pages",
            "smp/pg", "in95", "pg/rg", "cost%"])
        # attribution 0.65, top 1% 1/1, coverage 0.8.
        self.assertEqual(A.long_goal("stream", "ibs-16", 2_130_000_000,
                                     "0.4", j, j),
                         "  stream   ibs-16            insns 2.13e+09 yes, "
                         "cost 0.4 yes, attrib 65.0 no, hot1% P/R "
                         "100.0/100.0 yes, in95 80.0 no: not met")
        good = j.replace('"attribution": 0.65', '"attribution": 0.96') \
            .replace('"interval_coverage": 0.8}', '"interval_coverage": 0.95}')
        self.assertTrue(A.long_goal("w", "f", 2 * 10**9, "1.0", good,
                                    good).endswith(": met"))
        for insns, cost in ((1999999999, "1.0"), (None, "0.5"),
                            (2 * 10**9, "1.01"), (2 * 10**9, "-")):
            self.assertTrue(A.long_goal("w", "f", insns, cost, good,
                                        good).endswith("not met"))
        self.assertTrue(A.long_goal("w", "f", 2 * 10**9, "0.5", good,
                                    "").endswith("in95 - -: not met"))

    def test_long_report(self) -> None:
        """Scores in long mode: the runs' rows and goals from the files
        a boot left (the truth gone, so their JSON is scored as kept)."""
        d = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, d)
        with mock.patch.dict(os.environ, {"REFCNT_BUILD_DIR": d}):
            a = A.Accuracy(d, A.Config.from_env({
                "REFCNT_ACCURACY_LONG": "1", "REFCNT_ACCURACY_WORKLOADS":
                "stream", "REFCNT_ACCURACY_FEEDS": "pebs-2 first-touch",
                "REFCNT_ACCURACY_CONTROL": "0"}))
        os.makedirs(a.out)
        j = read("accuracy-compare-period.json")
        for f in ("pebs-2", "first-touch"):
            for name, text in (("boot", "boot of now\n"),
                               ("out", "pmu period 2\n"), ("all.json", j),
                               ("memside.json", j),
                               ("truth.csv.summary",
                                "vcpu 0 insns_window 3000000000 "
                                "muted_window 0 cost_window 3000000 "
                                "cost_muted 0\n")):
                A.write(a.path("stream", f, name), text)
        s = A.Scores(a)
        s.score()
        out = s.report()
        at = out.index("Long rows: a real machine's sample density "
                       "(REFCNT_ACCURACY_LONG)")
        self.assertEqual(out[at + 7].split(), A.LONG_HDR.split())
        self.assertEqual(out[at + 8].split(), [
            "stream", "pebs-2", "3.00e+09", "1.00", "7", "4", "1.75",
            "80.0/66.7", "0.100"])
        self.assertEqual(out[at + 9].split()[:4],
                         ["stream", "first-touch", "3.00e+09", "1.00"])
        goals = [ln for ln in out if ln.startswith("  stream   pebs-2 ")]
        self.assertEqual(len(goals), 2)  # the goal and the drain's line
        self.assertTrue(goals[0].endswith("in95 80.0 no: not met"))
        self.assertNotIn("  stream   first-touch       insns", "\n".join(out))
        s = A.Scores(A.Accuracy(d, A.Config()))
        self.assertNotIn("Long rows", "\n".join(s.report()))
