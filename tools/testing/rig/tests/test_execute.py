# SPDX-License-Identifier: GPL-2.0
"""rig.execute: two lanes, the order within each, the needs across them,
and the side lane's wait for a free CPU."""
from __future__ import annotations

import threading
import time
import unittest
from typing import Callable, List

from rig.execute import Execution
from rig.suite import Step


class Lanes(unittest.TestCase):
    def setUp(self) -> None:
        self.log: List[str] = []
        self.lock = threading.Lock()

    def act(self, name: str, secs: float = 0.0) -> Callable[[], None]:
        def run() -> None:
            with self.lock:
                self.log.append(f"start {name}")
            time.sleep(secs)
            with self.lock:
                self.log.append(f"end {name}")
        return run

    def plan(self) -> List[Step]:
        return [Step("bg", background=True, action=self.act("bg")),
                Step("a", action=self.act("a")),
                Step("s1", ("a",), lane="side", action=self.act("s1", 0.2)),
                Step("m", ("a",), action=self.act("m", 0.1)),
                Step("s2", lane="side", action=self.act("s2"))]

    def test_side_lane_runs_beside_the_main_lane(self) -> None:
        took = Execution(self.plan(), 2).run()
        self.assertEqual(set(took), {"bg", "a", "s1", "m", "s2"})
        # s1 waits for a; m starts while s1 runs; s2 after s1.
        self.assertLess(self.log.index("end a"), self.log.index("start s1"))
        self.assertLess(self.log.index("start m"), self.log.index("end s1"))
        self.assertLess(self.log.index("end s1"), self.log.index("start s2"))

    def test_one_lane_is_the_plan_order(self) -> None:
        Execution(self.plan(), 1).run()
        self.assertEqual([e for e in self.log if e.startswith("start")],
                         ["start bg", "start a", "start s1", "start m",
                          "start s2"])

    def test_side_lane_waits_for_a_free_cpu(self) -> None:
        free = threading.Event()

        def main_step() -> None:
            self.log.append("main")
            free.set()
        steps = [Step("x", lane="side", action=lambda: self.log.append("x")),
                 Step("m", action=main_step)]
        Execution(steps, 2, side_may_start=lambda: free.wait() and None).run()
        self.assertEqual(self.log, ["main", "x"])

    def test_a_side_failure_reaches_the_caller(self) -> None:
        def boom() -> None:
            raise RuntimeError("side step broke")
        with self.assertRaisesRegex(RuntimeError, "side step broke"):
            Execution([Step("x", lane="side", action=boom),
                       Step("m", action=lambda: None)], 2).run()


if __name__ == "__main__":
    unittest.main()
