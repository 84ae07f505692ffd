# SPDX-License-Identifier: GPL-2.0
"""rig.objbench (objects-bench): its figures' lines, as the bash
objects-bench printed them."""
from __future__ import annotations

import unittest

from rig import objbench as B


class Lines(unittest.TestCase):
    def test_tracker(self) -> None:
        self.assertEqual(B.small_line("41.5", "57.25"),
                         "tracker, small allocation (malloc+free of 32 B): "
                         "41.5 ns without, 57.25 ns with: +15.8 ns a pair")
        self.assertEqual(B.large_line("8400", "9021"),
                         "tracker, large allocation (malloc+free of 1 MiB, "
                         "stack taken, no counters): 8400 ns without, 9021 "
                         "ns with: +621 ns a pair")
        self.assertEqual(B.trees_line("1.18", "1.234"),
                         "binary trees (2^16 nodes x 20, every node a malloc;"
                         " worst case): 1.18 s without, 1.234 s with: +4.6% "
                         "(goal <= 5%)")

    def test_callgrind(self) -> None:
        self.assertEqual(B.callgrind_count("==1== \n==1== Collected : 259268"
                                           "\n==1== \n"), "259268")
        self.assertEqual(B.callgrind_line("259268", "3535968"),
                         "binary trees (2^14 nodes x 10) under callgrind: "
                         "259268 instructions without, 3535968 with: "
                         "+1263.8%, 10.0 a malloc+free pair")

    def test_redis(self) -> None:
        self.assertEqual(B.redis_line("3.45", "3.5"),
                         "redis-server under redis-benchmark (500,000 "
                         "requests): 3.45 s of server CPU without, 3.5 s "
                         "with: +1.4% (goal <= 5%)")
        self.assertIn("no figure (every run failed: ? s without, 3.5 s "
                      "with)", B.redis_line("?", "3.5"))

    def test_best_and_cpu(self) -> None:
        self.assertEqual(B.best_of(["41.50", "41.4", None, "100"]), "41.4")
        self.assertIsNone(B.best_of([None]))
        self.assertEqual(B.first_number("57.25 ns\nmore\n"), "57.25")
        stat = "212 (redis-server) S " + " ".join(["0"] * 10) + " 300 45 0"
        self.assertEqual(B.proc_cpu(stat), "3.45")
        self.assertEqual(B.proc_cpu("212 (x) S 1 2 3 4 5 6 7 8 9 10 200 0"),
                         "2")
        self.assertIsNone(B.proc_cpu("short"))


if __name__ == "__main__":
    unittest.main()
