# SPDX-License-Identifier: GPL-2.0
"""rig.suite and make check's plan: the order of the steps, what each
needs, the two-CPU schedule and the budget report."""
from __future__ import annotations

import os
import unittest
from typing import List

from rig import check, suite
from rig.run import Runner
from rig.suite import Step

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__),
                                    "../../../.."))
K1, K2 = "6.1.0-1-amd64", "6.12.1+deb12-amd64"


def make_plan(long: bool = False, debug: bool = True,
              topologies: List[str] = []) -> List[Step]:
    cfg = check.Config(root=ROOT, build="/nonexistent", long=long,
                       debian=[K1, K2], debug=debug,
                       topologies=list(topologies))
    return check.plan(check.Check(cfg, Runner(ROOT, "/nonexistent")))


class Order(unittest.TestCase):
    def test_needs_must_come_first(self) -> None:
        with self.assertRaisesRegex(suite.PlanError, "b needs a, which "
                                    "comes after it"):
            suite.order([Step("b", ("a",)), Step("a")])

    def test_unknown_need(self) -> None:
        with self.assertRaisesRegex(suite.PlanError, "not in the plan"):
            suite.order([Step("a", ("x",))])

    def test_unique_names(self) -> None:
        with self.assertRaisesRegex(suite.PlanError, "two steps named a"):
            suite.order([Step("a"), Step("a")])


class Schedule(unittest.TestCase):
    def test_side_lane_after_the_background(self) -> None:
        slots = suite.schedule([Step("bg", estimate=100, background=True),
                                Step("a", estimate=30),
                                Step("s", ("a",), 20, lane="side"),
                                Step("b", ("a",), 200)])
        self.assertEqual([(s.name, s.start, s.end) for s in slots],
                         [("bg", 0, 100), ("a", 0, 30), ("s", 100, 120),
                          ("b", 30, 230)])

    def test_foreground_in_order_background_beside(self) -> None:
        slots = suite.schedule([Step("bg", estimate=100, background=True),
                                Step("a", estimate=30),
                                Step("b", ("a",), 20),
                                Step("c", ("bg",), 10)])
        self.assertEqual([(s.name, s.start, s.end) for s in slots],
                         [("bg", 0, 100), ("a", 0, 30), ("b", 30, 50),
                          ("c", 100, 110)])
        self.assertEqual(suite.makespan(slots), 110)

    def test_more_cpus_shorten_the_background(self) -> None:
        slots = suite.schedule([Step("bg", estimate=100, background=True)],
                               cpus=4)
        self.assertEqual(slots[0].end, 50)

    def test_budget_report(self) -> None:
        steps = [Step("a", estimate=30), Step("b", estimate=100)]
        lines = suite.budget_report(steps, {"a": 95, "b": 150}, 3700)
        self.assertEqual(lines, [
            "time: 3700 s of the 3600 s budget (planned 130 s from the "
            "reference run's step times)",
            "  a: 95 s, estimate 30 s",
            "  over budget by 100 s: see Documentation/testing.rst, "
            "\"The time budget\""])
        # check-long: no budget to be over.
        self.assertEqual(suite.budget_report(steps, {"a": 95}, 3700, None), [
            "time: 3700 s (planned 130 s from the reference run's step "
            "times)", "  a: 95 s, estimate 30 s"])


class Select(unittest.TestCase):
    steps = [Step("bg", estimate=9, background=True), Step("a"),
             Step("b", ("a",)), Step("w", ("bg", "a")), Step("c", ("w",))]

    def names(self, *patterns: str) -> List[str]:
        return [s.name for s in suite.select(self.steps, patterns)]

    def test_all_without_patterns(self) -> None:
        self.assertEqual(self.names(), ["bg", "a", "b", "w", "c"])

    def test_background_needs_come_along(self) -> None:
        # c needs w, which needs bg: bg starts; a and w do not run.
        self.assertEqual(self.names("c"), ["bg", "c"])
        self.assertEqual(self.names("b"), ["b"])
        self.assertEqual(self.names("[ab]", "w"), ["bg", "a", "b", "w"])


class CheckPlan(unittest.TestCase):
    """make check's plan, step by step (Documentation/testing.rst)."""

    def test_make_check(self) -> None:
        steps = suite.order(make_plan())
        self.assertEqual([s.name for s in steps], [
            "debug-kernel-build", "pmu-kernel-build", "debian-root-build",
            "deb-chroot-build", f"module-{K1}", f"module-{K2}", "selftests", "tools", "pmda",
            "fleet-host", "track-check", "json-check", "interval-check",
            "lib-check",
            "papi-host",
            "rig-check", "core-check", "pmu-check", "checkpatch",
            "kernel-doc", "shellcheck", "cross-arm64",
            f"guest {K1}/one", f"guest {K1}/four", f"guest {K1}/72",
            f"guest {K1}/hotplug-memhp",
            f"guest {K2}/four", f"guest {K2}/hotplug-memhp",
            f"truth {K1}", f"trace {K1}", f"hub {K1}", f"hub {K1} period 64",
            f"fleet {K2}",
            f"objects {K1}", "demo", "deb",
            "debug-kernel", "guest debug/four", "guest debug/hotplug-memhp",
            "testpmu debug", "hub debug/four (part)", "testpmu pmu-6.12"])
        self.assertEqual([s.name for s in steps if s.background],
                         ["debug-kernel-build", "pmu-kernel-build",
                          "debian-root-build", "deb-chroot-build"])
        self.assertEqual([s.name for s in steps if s.lane == "side"],
                         ["core-check", "pmu-check", "checkpatch",
                          "kernel-doc", "shellcheck", "cross-arm64", "deb"])

    def test_guests_need_their_module(self) -> None:
        needs = {s.name: s.needs for s in make_plan()}
        self.assertEqual(needs[f"guest {K2}/four"],
                         (f"module-{K2}", "selftests", "tools"))
        self.assertEqual(needs["debug-kernel"],
                         ("debug-kernel-build", "selftests", "tools"))
        self.assertIn("debian-root-build", needs[f"fleet {K2}"])

    def test_two_cpu_schedule(self) -> None:
        by = {s.name: s for s in suite.schedule(make_plan(), cpus=2)}
        # The debug kernel, built beside everything else, is ready before
        # the first step that needs it: no step waits for it.
        self.assertLessEqual(by["debug-kernel-build"].end,
                             by["debug-kernel"].start)
        self.assertEqual(by[f"module-{K1}"].start, 0)
        self.assertEqual(by[f"guest {K1}/one"].start, by["rig-check"].end)
        # The side lane's checks start once the debug kernel is built.
        self.assertEqual(by["core-check"].start, by["debug-kernel-build"].end)
        self.assertEqual(by["deb"].start, by["cross-arm64"].end)
        one_lane = {s.name: s for s in suite.schedule(make_plan(), lanes=1)}
        self.assertEqual(one_lane["core-check"].start,
                         one_lane["rig-check"].end)
        self.assertLess(suite.makespan(list(by.values())),
                        suite.makespan(list(one_lane.values())))

    def test_check_long(self) -> None:
        names = [s.name for s in make_plan(long=True)]
        for n in (f"guest {K2}/one", f"guest {K2}/72", f"hub {K2}",
                  f"papi {K1}", f"papi {K2}", f"fleet {K1}",
                  "hub debug/four", "hub debug/four refcntd", "kcsan"):
            self.assertIn(n, names)

    def test_check_long_builds_kcsan_in_the_background(self) -> None:
        steps = make_plan(long=True)
        self.assertEqual([s.name for s in steps if s.background][:2],
                         ["debug-kernel-build", "kcsan-kernel-build"])
        by = {s.name: s for s in suite.schedule(steps, cpus=2)}
        # Queued behind the debug kernel (one build at a time), and done
        # before the step that needs it.
        self.assertEqual(by["kcsan-kernel-build"].start,
                         by["debug-kernel-build"].end)
        self.assertLessEqual(by["kcsan-kernel-build"].end,
                             by["kcsan"].start)
        needs = {s.name: s.needs for s in steps}
        self.assertEqual(needs["kcsan"], ("kcsan-kernel-build",))

    def test_topologies_and_no_debug(self) -> None:
        names = [s.name for s in make_plan(debug=False,
                                           topologies=["four-dense"])]
        self.assertIn(f"guest {K1}/four-dense", names)
        self.assertNotIn(f"guest {K1}/one", names)
        self.assertFalse([n for n in names if "debug" in n])


class SelftestLists(unittest.TestCase):
    def test_tests_but(self) -> None:
        import tempfile
        with tempfile.TemporaryDirectory() as d:
            os.mkdir(os.path.join(d, "selftests"))
            with open(os.path.join(d, "selftests/tests.list"), "w") as f:
                f.write("a_test\nhotplug_test\nb_test\n")
            self.assertEqual(check.tests_but(d, ["hotplug_test"]),
                             "./run_tests.sh a_test b_test")

    def test_72_list_names_built_tests(self) -> None:
        with open(os.path.join(ROOT, "selftests/refcnt/Makefile")) as f:
            mk = f.read()
        for t in check.TESTS_72 + check.ONE_LEAVES_OUT:
            self.assertIn(t.removesuffix("_test"), mk, t)


if __name__ == "__main__":
    unittest.main()
