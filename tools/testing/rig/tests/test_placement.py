# SPDX-License-Identifier: GPL-2.0
"""rig.placement (make placement): the settings, refcnt-vm's command line,
the guest's env file and the table's head, against golden outputs (first
made by the bash refcnt-placement with a stand-in refcnt-vm that played
back placement-serial.log: REFCNT_PLACEMENT_KERNEL=6.1.0-56-amd64,
_SECONDS=5, _WORKLOADS="phase shared", _MODES="none nb1", _VARIANTS
empty; since then with the instruction clock and repeats); and
placement/placement-score's medians, spreads, verdicts and goals on a
made-up guest log and truth series (placement-score-*)."""
from __future__ import annotations

import contextlib
import importlib.machinery
import importlib.util
import io
import json
import os
import tempfile
import unittest
from types import ModuleType
from typing import Any, Dict, List, Sequence, Tuple

from rig import hostcmd as H
from rig import placement as P

DATA = os.path.join(os.path.dirname(__file__), "data")
SCORE = os.path.join(os.path.dirname(__file__), "..", "..", "placement",
                     "placement-score")
ENV = {"REFCNT_PLACEMENT_SECONDS": "5",
       "REFCNT_PLACEMENT_WORKLOADS": "phase shared",
       "REFCNT_PLACEMENT_MODES": "none nb1", "REFCNT_PLACEMENT_VARIANTS": ""}
WALL = dict(ENV, REFCNT_PLACEMENT_ICOUNT="off")


def read(name: str) -> str:
    with open(os.path.join(DATA, name), newline="") as f:
        return f.read()


def golden_args(name: str) -> List[str]:
    return [a.replace("@BUILD@", "/b") for a in read(name).split("\n")[:-1]]


class Placement(unittest.TestCase):
    def test_settings(self) -> None:
        c = P.Config.from_env(ENV)
        self.assertEqual((c.variants, c.natural_modes, c.icount, c.repeats,
                          c.runs(), c.report),
                         ("misplaced natural", "none nb1", "0", 3, 24, False))
        self.assertEqual(c.guest_env(),
                         'SECS=5\nWORKLOADS="phase shared"\n'
                         'VARIANTS="misplaced natural"\nMODES="none nb1"\n'
                         'NATURAL_MODES="none nb1"\nREPEATS=3\n')
        self.assertEqual(c.command()[1],
                         "REFCNT_PLACEMENT_WORKLOADS='phase shared'")
        self.assertEqual(c.command()[5:], ["REFCNT_PLACEMENT_ICOUNT=0",
                                           "REFCNT_PLACEMENT_REPEATS=3"])
        d = P.Config.from_env({"REFCNT_PLACEMENT_REPORT": "1"})
        # 9 workloads x 2 variants x 12 modes x 3 repeats.
        self.assertEqual((d.secs, d.runs(), d.report), ("5", 648, True))

    def test_seconds_follow_the_clock(self) -> None:
        """The default length is 5 x 10^9 instructions on the instruction
        clock at any shift, 20 s at wall-clock time."""
        for shift, secs in (("0", "5"), ("1", "10"), ("3", "40")):
            c = P.Config.from_env({"REFCNT_PLACEMENT_ICOUNT": shift})
            self.assertEqual(c.secs, secs)
        self.assertEqual(P.Config.from_env(WALL).secs, "5")
        self.assertEqual(
            P.Config.from_env({"REFCNT_PLACEMENT_ICOUNT": "off"}).secs, "20")

    def test_repeats(self) -> None:
        c = P.Config.from_env(dict(WALL, REFCNT_PLACEMENT_REPEATS="1"))
        self.assertEqual((c.runs(), c.timeout()), (8, 8 * 300 + 900))
        self.assertTrue(c.guest_env().endswith("REPEATS=1\n"))
        c = P.Config.from_env(dict(WALL, REFCNT_PLACEMENT_REPEATS="5"))
        self.assertEqual((c.runs(), c.timeout()), (40, 40 * 300 + 900))

    def test_timeout_counts_virtual_seconds(self) -> None:
        # 5 virtual seconds at 10^9 instructions each, at the assumed
        # 10^7 per host second: 500 host seconds more per run.
        c = P.Config.from_env(ENV)
        self.assertEqual(c.timeout(), 24 * (300 + 500) + 900)
        c = P.Config.from_env(dict(ENV, REFCNT_PLACEMENT_ICOUNT="2"))
        self.assertEqual(c.timeout(), 24 * (300 + 125) + 900)

    def test_bad_settings(self) -> None:
        for k, v in (("REFCNT_PLACEMENT_ICOUNT", "11"),
                     ("REFCNT_PLACEMENT_ICOUNT", "on"),
                     ("REFCNT_PLACEMENT_REPEATS", "0"),
                     ("REFCNT_PLACEMENT_REPEATS", "x"),
                     ("REFCNT_PLACEMENT_SECONDS", "2.5")):
            with self.assertRaises(H.Die, msg=f"{k}={v}") as e:
                P.Config.from_env({k: v})
            self.assertTrue(str(e.exception).startswith(k + ": "))

    def test_command_line_icount(self) -> None:
        self.assertEqual(P.vm_cmd("/r", "/b", "6.1.0-56-amd64",
                                  P.Config.from_env(ENV), "/b/placement"),
                         ["/r/tools/testing/refcnt-vm"] +
                         golden_args("placement-vm-args-icount.golden"))

    def test_command_line_icount_6_12_tiered(self) -> None:
        args = P.vm_cmd("/r", "/b", "6.12.95+deb12-amd64",
                        P.Config.from_env(ENV), "/b/placement")
        self.assertEqual(args[args.index("--topology") + 1], "tiered")
        self.assertEqual(args[args.index("--icount") + 1], "0")

    def test_command_line_wall_clock(self) -> None:
        self.assertEqual(P.vm_cmd("/r", "/b", "6.1.0-56-amd64",
                                  P.Config.from_env(WALL), "/b/placement"),
                         ["/r/tools/testing/refcnt-vm"] +
                         golden_args("placement-vm-args.golden"))

    def test_out_dirs(self) -> None:
        """A boot's own directory, so that boots can run in parallel;
        several only to score together."""
        self.assertEqual(P.out_dirs({}, "/b", False), ["/b/placement"])
        env = {"REFCNT_PLACEMENT_DIR": "/x/p1"}
        self.assertEqual(P.out_dirs(env, "/b", False), ["/x/p1"])
        args = P.vm_cmd("/r", "/b", K612, P.Config.from_env(ENV), "/x/p1")
        self.assertEqual(args[args.index("--truth") + 1], "/x/p1/truth.csv")
        self.assertEqual(args[args.index("--log") + 1], "/x/p1/serial.log")
        env = {"REFCNT_PLACEMENT_DIR": "/x/p1  /x/p2"}
        self.assertEqual(P.out_dirs(env, "/b", True), ["/x/p1", "/x/p2"])
        with self.assertRaises(H.Die) as e:
            P.out_dirs(env, "/b", False)
        self.assertTrue(str(e.exception).startswith("REFCNT_PLACEMENT_DIR: "))

    def test_header(self) -> None:
        serial = P.raw_lines(os.path.join(DATA, "placement-serial.log"))
        self.assertEqual("".join(ln + "\n" for ln in
                                 P.header(serial, P.Config.from_env(WALL),
                                          K612)),
                         read("placement-header.golden"))
        self.assertEqual("".join(ln + "\n" for ln in
                                 P.header(serial, P.Config.from_env(ENV),
                                          "6.1.0-56-amd64")),
                         read("placement-header-icount.golden"))
        # 6.12 on the instruction clock: the tiered machine, two CPUs.
        tiered = P.header(serial, P.Config.from_env(ENV), K612)
        self.assertEqual(tiered[:2], P.header(serial, P.Config.from_env(WALL),
                                              K612)[:2])
        self.assertEqual(tiered[-2], "# clock: icount shift 0 (virtual "
                         "time, 1 ns per instruction)")


K612 = "6.12.95+deb12-amd64"


def load_score() -> ModuleType:
    """placement/placement-score, a script without .py, as a module."""
    loader = importlib.machinery.SourceFileLoader("placement_score", SCORE)
    spec = importlib.util.spec_from_loader("placement_score", loader)
    assert spec is not None
    mod = importlib.util.module_from_spec(spec)
    loader.exec_module(mod)
    return mod


S = load_score()
LOG = os.path.join(DATA, "placement-score.log")
SERIES = os.path.join(DATA, "placement-score.series")


def score(log: str = LOG, more: Sequence[str] = ()) -> Tuple[int, str, Dict[str, Any]]:
    """placement-score's status, stdout and JSON on LOG and SERIES (and
    MORE boots' pairs)."""
    with tempfile.TemporaryDirectory() as tmp:
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            rc = S.main(["--json", f"{tmp}/p.json", log, SERIES] + list(more))
        with open(f"{tmp}/p.json") as f:
            return rc, out.getvalue(), json.load(f)


class Score(unittest.TestCase):
    """placement-score-log and -series: stress-ng VM misplaced on two
    nodes (one CPU) under none, nb1, nb2 (not run), refcntd-pebs,
    refcntd-ibs (its second repeat gave no figure, after its window) and
    refcntd-hub, three repeats, the rows in the guest's order each
    repeat.  Each run's window has 8 series lines 0.5 s apart (4 s of
    host time) for a guest's 8.00 s, each line the same misses: remote%
    is constant through a run (none 80, 78, 82; nb1 30, 34, 26; pebs 20,
    22, 21; ibs 40, -, 44; hub 28, 30, 33)."""

    def rows(self, j: Dict[str, Any]) -> Dict[str, Dict[str, Any]]:
        return {r["mode"]: r for r in j["rows"]}

    def test_table(self) -> None:
        rc, out, _ = score()
        self.assertEqual(rc, 0)
        self.assertEqual(out, read("placement-score.golden"))

    def test_medians_and_spreads(self) -> None:
        rows = self.rows(score()[2])
        nb1 = rows["nb1"]
        self.assertEqual((nb1["n"], nb1["runs"], nb1["repeats"]),
                         (3, ["2", "7", "12"], ["1", "2", "3"]))
        self.assertAlmostEqual(nb1["median"]["remote"], 0.30)
        self.assertAlmostEqual(nb1["spread"]["remote"], 0.04)
        self.assertEqual((nb1["min"]["pages_moved"], nb1["median"]["pages_moved"],
                          nb1["max"]["pages_moved"], nb1["spread"]["pages_moved"]),
                         (100, 110, 120, 10))
        # t90 from the unbinding (0.5, 0.2, 1.0 s) to the first second of
        # guest time whose locality is final: 0.5, 0.8, 0.0.
        self.assertAlmostEqual(nb1["median"]["t90"], 0.5)
        self.assertAlmostEqual(nb1["spread"]["t90"], 0.4)
        ibs = rows["refcntd-ibs"]
        self.assertEqual((ibs["n"], ibs["runs"]), (2, ["4", None, "14"]))
        self.assertAlmostEqual(ibs["median"]["remote"], 0.42)
        self.assertEqual((rows["nb2"]["n"], rows["nb2"]["na"]),
                         (0, "one memory tier (0): nothing to promote from"))

    def test_every_repeat_in_the_json(self) -> None:
        runs = score()[2]["runs"]
        self.assertEqual(len(runs), 18)
        by_run = {r["run"]: r for r in runs if "run" in r}
        self.assertEqual(sorted(by_run, key=int), [str(k) for k in range(1, 16) if k != 9])
        # Run 10 is window 10, the window of the repeat that gave no
        # figure (9) skipped: hub's second repeat, 30% remote.
        self.assertEqual((by_run["10"]["mode"], by_run["10"]["repeat"]), ("refcntd-hub", "2"))
        self.assertAlmostEqual(by_run["10"]["remote"], 0.30)
        self.assertAlmostEqual(by_run["13"]["remote"], 0.21)

    def test_verdicts_against_nb1(self) -> None:
        rows = self.rows(score()[2])
        # pebs 21+-1 against 30+-4: 9 > 5; ibs 42+-2: 12 > 6; hub 30+-2.5:
        # the same median.
        self.assertEqual([rows[m].get("verdict") for m in
                          ("none", "nb1", "refcntd-pebs", "refcntd-ibs", "refcntd-hub")],
                         [None, None, "better", "worse", "same"])

    def test_compare(self) -> None:
        def row(n: int, median: float, spread: float) -> Dict[str, Any]:
            return {"n": n, "stats": {"remote": {"median": median, "spread": spread}}}

        self.assertEqual(S.compare(row(3, 0.20, 0.02), row(3, 0.30, 0.08)), "same")
        self.assertEqual(S.compare(row(3, 0.20, 0.02), row(3, 0.30, 0.07)), "better")
        self.assertEqual(S.compare(row(3, 0.40, 0.0), row(3, 0.30, 0.0)), "worse")
        self.assertIsNone(S.compare(row(1, 0.10, 0.0), row(3, 0.30, 0.0)))
        self.assertIsNone(S.compare({"n": 3, "stats": {}}, row(3, 0.30, 0.0)))

    def test_goals_are_printed_not_asserted(self) -> None:
        rc, out, _ = score()
        goals = out[out.index("Goals"):].split("\n")
        self.assertEqual(rc, 0)
        # pebs's t90 0.8+-0.2 against nb1's 0.5+-0.4: within the spreads.
        self.assertIn("  stressng-vm     misplaced refcntd-pebs  met", goals)
        self.assertIn("  stressng-vm     misplaced refcntd-hub   NOT met: remote% 30.0+-2.5 "
                      "vs nb1's 30.0+-4.0: same", goals)

    def test_goal_misses(self) -> None:
        def row(remote: float, pgm: float, t90: Any, spread: float = 0.0) -> Dict[str, Any]:
            st = {"remote": {"median": remote, "spread": spread},
                  "pgmigrate": {"median": pgm, "spread": spread * 1000}}
            if t90 is not None:
                st["t90"] = {"median": t90, "spread": spread}
            return {"n": 3, "stats": st}

        nb1 = {"nb1": row(0.30, 2000, 1.0)}
        self.assertEqual(S.goal_misses("refcntd-pebs", row(0.30, 2000, 1.0), nb1), [])
        # Apart by less than the floor: a point of remote%, 0.1 s of t90.
        self.assertEqual(S.goal_misses("refcntd-pebs", row(0.305, 2000, 1.05), nb1), [])
        self.assertEqual(S.goal_misses("refcntd-ibs", row(0.40, 2001, 1.2), nb1),
                         ["remote% 40.0+-0.0 vs nb1's 30.0+-0.0: worse",
                          "pgmigrate 2001+-0 vs nb1's 2000+-0: more",
                          "t90 1.2+-0.0 vs nb1's 1.0+-0.0: longer"])
        # Within the spreads: no verdict, no miss.
        self.assertEqual(S.goal_misses("refcntd-ibs", row(0.40, 2100, 1.2, 0.2), nb1), [])
        self.assertEqual(S.goal_misses("refcntd-fault", row(0.20, 10, None), nb1),
                         ["t90 never, nb1's 1.0+-0.0"])
        # The hub: strictly better than every kernel mode.
        kernel = dict(nb1, none=row(0.9, 0, None), nb2=row(0.25, 0, 1.0))
        self.assertEqual(S.goal_misses("refcntd-hub", row(0.25, 0, 1.0), kernel),
                         ["remote% 25.0+-0.0 vs nb2's 25.0+-0.0: same"])

    def test_guest_clock(self) -> None:
        """A run's times are the guest's: its 8.00 s over the window's 4 s
        of host time."""
        nodes, lines, period = S.parse_series(SERIES)
        dist = {0: [10, 30], 1: [30, 10]}
        host = S.score_run(2, lines, nodes, period, dist)
        guest = S.score_run(2, lines, nodes, period, dist, 8.0)
        self.assertEqual((host["dur"], guest["dur"], guest["clock_scale"]), (4.0, 8.0, 2.0))
        self.assertEqual([t for t, _ in guest["curve"]], [1.0 * k for k in range(1, 9)])
        self.assertEqual(S.t90(guest, 0.2), 0.8)
        self.assertEqual(S.t90(host, 0.2), 0.3)

    def test_boots_make_one_table(self) -> None:
        """A second boot of repeats 1 and 2 only: nb1's row has five
        runs, its medians over them (30, 34, 26, 30, 34 -> 30, spread 4),
        each run scored on its own boot's windows."""
        with tempfile.TemporaryDirectory() as tmp:
            with open(f"{tmp}/b2.log", "w") as f:
                for ln in read("placement-score.log").split("\n"):
                    if not ln.startswith("result repeat=3 "):
                        f.write(ln + "\n")
            rc, out, j = score(more=[f"{tmp}/b2.log", SERIES])
        nb1 = self.rows(j)["nb1"]
        self.assertEqual((rc, nb1["n"], nb1["runs"]),
                         (0, 5, ["1/2", "1/7", "1/12", "2/2", "2/7"]))
        self.assertAlmostEqual(nb1["median"]["remote"], 0.30)
        self.assertAlmostEqual(nb1["spread"]["remote"], 0.04)
        self.assertEqual(sorted({r["boot"] for r in j["runs"]}), [1, 2])

    def test_boots_of_another_machine_refused(self) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            with open(f"{tmp}/b2.log", "w") as f:
                f.write(read("placement-score.log").replace(
                    "distance 1 30 10", "distance 1 20 10"))
            err = io.StringIO()
            with contextlib.redirect_stderr(err):
                self.assertEqual(S.main([LOG, SERIES, f"{tmp}/b2.log", SERIES]), 1)
        self.assertIn("another machine", err.getvalue())

    def test_rows_in_mode_order(self) -> None:
        """Rows from boots that each ran some modes: by workload as first
        seen, then misplaced before natural, then make placement's mode
        order, unknown modes last."""
        runs = [{"workload": w, "variant": v, "mode": m} for w, v, m in (
            ("tier", "misplaced", "refcntd-hub"), ("redis", "natural", "none"),
            ("tier", "misplaced", "x-mode"), ("tier", "natural", "none"),
            ("tier", "misplaced", "feed-hub"), ("tier", "misplaced", "none"))]
        self.assertEqual([(r["workload"], r["variant"], r["mode"])
                          for r in S.make_rows(runs)], [
            ("tier", "misplaced", "none"), ("tier", "misplaced", "refcntd-hub"),
            ("tier", "misplaced", "feed-hub"), ("tier", "misplaced", "x-mode"),
            ("tier", "natural", "none"), ("redis", "natural", "none")])

    def test_costs(self) -> None:
        """The feed alone against none, refcntd against the feed alone;
        none without a feed-only row."""
        def row(mode: str, fig: float) -> Dict[str, Any]:
            return {"workload": "redis", "variant": "misplaced", "mode": mode,
                    "n": 3, "stats": {"figure": {"median": fig, "spread": 0.0}}}

        rows = [row("none", 1000.0), row("feed-hub", 500.0),
                row("refcntd-hub", 400.0), row("refcntd-pebs", 900.0),
                row("feed-ibs", 990.0)]
        self.assertEqual(S.cost_lines(rows), [
            "  redis           misplaced ibs   feed 0.99 of none's",
            "  redis           misplaced hub   feed 0.50 of none's, refcntd on it "
            "0.80 of the feed's"])
        self.assertEqual(S.cost_lines(rows[:1] + rows[2:4]), [])

    def test_one_repeat_has_no_verdict(self) -> None:
        """A log of before repeats (no repeat=): repeat 1, no spread."""
        with tempfile.TemporaryDirectory() as tmp:
            with open(f"{tmp}/old.log", "w") as f:
                for ln in read("placement-score.log").split("\n"):
                    if ln.startswith("result repeat=1 "):
                        f.write("result " + ln[len("result repeat=1 "):] + "\n")
                    elif not ln.startswith("result "):
                        f.write(ln + "\n")
            rc, out, j = score(f"{tmp}/old.log")
        rows = self.rows(j)
        self.assertEqual((rc, rows["nb1"]["n"], rows["nb1"]["repeats"]), (0, 1, ["1"]))
        self.assertNotIn("verdict", rows["refcntd-pebs"])
        self.assertIn(" 30.0 ", out)
        self.assertNotIn("+-", out.split("\n")[2])
