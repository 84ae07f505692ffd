# SPDX-License-Identifier: GPL-2.0
"""make check's bookkeeping: the counts, one summary line per step, the
progress lines and the last line CI reads ("N passed, N failed, N
skipped")."""
from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Callable, List, Optional, Tuple

from .tap import Counts


def seconds(t0: float, now: Optional[float] = None) -> str:
    """Whole seconds since T0, as every line of make check shows them."""
    return f"{int((time.time() if now is None else now) - t0)}s"


# At most this many lines of why a step failed in the summary: CI shows
# the end of the output, and the cause must be in it.
WHY_LINES = 24


@dataclass
class Record:
    status: str          # "ok", "not ok" or "skip"
    text: str
    why: List[str] = field(default_factory=list)

    def lines(self) -> List[str]:
        out = [f"{self.status:<8} {self.text}"]
        why = self.why[:WHY_LINES]
        if len(self.why) > WHY_LINES:
            why.append(f"... {len(self.why) - WHY_LINES} lines more in the log")
        return out + [f"           {w}" for w in why]


@dataclass
class Results:
    """The counts of a run and its steps' lines, as they ended."""
    counts: Counts = field(default_factory=Counts)
    records: List[Record] = field(default_factory=list)
    t_start: float = field(default_factory=time.time)
    out: Callable[[str], None] = print
    # Two lanes of steps report here (rig.execute).
    lock: threading.RLock = field(default_factory=threading.RLock,
                                  compare=False, repr=False)

    def progress(self, text: str) -> None:
        self.out(f"==> [{int(time.time() - self.t_start)}s] {text}")

    def passed(self, text: str, shown: Optional[str] = None) -> None:
        with self.lock:
            self.counts.passed += 1
            self.out(f"ok      {shown or text}")
            self.records.append(Record("ok", text))

    def failed(self, text: str, shown: Optional[str] = None,
               why: Optional[List[str]] = None) -> None:
        with self.lock:
            self.counts.failed += 1
            self.out(f"not ok  {shown or text}")
            self.records.append(Record("not ok", text, list(why or [])))

    def skipped(self, name: str, reason: str) -> None:
        with self.lock:
            self.counts.skipped += 1
            self.out(f"skip    {name}: {reason}")
            self.records.append(Record("skip", f"{name}: {reason}"))

    def add_tap(self, name: str, counts: Counts, rc: int, t0: float,
                why: Optional[List[str]] = None) -> Tuple[bool, str]:
        """A step made of TAP results; one failure more when the step
        failed (RC) without a failed result.  Whether nothing failed, and
        the step's line.  WHY: the failed results and their diagnostics,
        repeated under the step in the summary."""
        what = counts.line()
        failed = counts.failed
        with self.lock:
            self.counts += counts
            if rc != 0 and failed == 0:
                self.counts.failed += 1
                failed = 1
                what += f" + 1 failed: exit {rc}"
            text = f"{name}: {what} ({seconds(t0)})"
            status = "ok" if failed == 0 else "not ok"
            self.records.append(Record(status, text,
                                       list(why or []) if failed else []))
        return failed == 0, text

    def summary(self) -> List[str]:
        lines = ["", "==> refcnt-check summary "
                 f"({seconds(self.t_start)} in all)"]
        for r in self.records:
            lines += [f"  {line}" for line in r.lines()]
        lines.append(self.counts.line())
        return lines

    @property
    def ok(self) -> bool:
        return self.counts.failed == 0
