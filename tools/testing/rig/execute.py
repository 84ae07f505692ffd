# SPDX-License-Identifier: GPL-2.0
"""Running a plan: the main lane's steps one after the other in this
thread; with two lanes, the side lane's (host checks that no guest needs
and that write nothing the main lane reads) in a second thread, from the
moment a CPU is free for them (the background builds are done), each once
the steps it needs are done.  A guest under TCG keeps about one CPU busy,
so on two CPUs a host check beside it costs the guest little and ends
the run sooner."""
from __future__ import annotations

import threading
import time
from typing import Callable, Dict, List, Sequence

from .suite import Step

SIDE = "side"


class Execution:
    def __init__(self, steps: Sequence[Step], lanes: int = 2,
                 side_may_start: Callable[[], object] = lambda: None) -> None:
        self.steps = list(steps)
        self.lanes = lanes
        self.side_may_start = side_may_start
        self.done: Dict[str, threading.Event] = {
            s.name: threading.Event() for s in self.steps}
        self.took: Dict[str, int] = {}
        self.errors: List[BaseException] = []

    def _run(self, s: Step) -> None:
        for n in s.needs:
            if n in self.done:
                self.done[n].wait()
        t0 = time.time()
        try:
            if s.action is not None:
                s.action()
        finally:
            self.took[s.name] = int(time.time() - t0)
            self.done[s.name].set()

    def _side(self, steps: Sequence[Step]) -> None:
        try:
            # The main lane starts the background jobs first; then the
            # side lane waits for a free CPU.
            for s in self.steps:
                if s.background:
                    self.done[s.name].wait()
            self.side_may_start()
            for s in steps:
                self._run(s)
        except BaseException as e:  # re-raised in the main thread
            self.errors.append(e)
            for s in steps:
                self.done[s.name].set()

    def run(self) -> Dict[str, int]:
        """Run every step; the seconds each took."""
        side = [s for s in self.steps if s.lane == SIDE] \
            if self.lanes > 1 else []
        thread = threading.Thread(target=self._side, args=(side,),
                                  name="side lane", daemon=True)
        if side:
            thread.start()
        # An exception here (SIGTERM, ^C) leaves the daemon thread behind:
        # the process ends, and the driver stops the background jobs.
        for s in self.steps:
            if s not in side:
                self._run(s)
        if side:
            thread.join()
        if self.errors:
            raise self.errors[0]
        return self.took
