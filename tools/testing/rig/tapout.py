# SPDX-License-Identifier: GPL-2.0
"""TAP as the rig's host checks write it (lib/rig.sh's ok, notok, skip),
kselftest's format that rig.tap counts: "ok N DESC", "not ok N DESC" with
"#   DIAG" lines, "ok N DESC # SKIP REASON", "# " diagnostics, "1..N"."""
from __future__ import annotations

import sys
from typing import Iterable, TextIO


class Writer:
    """Numbers the results and counts the failures of one TAP stream."""

    def __init__(self, out: TextIO = sys.stdout) -> None:
        self.out = out
        self.n = 0
        self.failed = 0

    def emit(self, line: str) -> None:
        print(line, file=self.out, flush=True)

    def plan(self, n: int) -> None:
        self.emit(f"1..{n}")

    def ok(self, desc: str) -> None:
        self.n += 1
        self.emit(f"ok {self.n} {desc}")

    def notok(self, desc: str, diags: Iterable[str] = ()) -> None:
        self.n += 1
        self.failed += 1
        self.emit(f"not ok {self.n} {desc}")
        for d in diags:
            self.emit(f"#   {d}")

    def skip(self, desc: str, reason: str) -> None:
        self.n += 1
        self.emit(f"ok {self.n} {desc} # SKIP {reason}")

    def ok_if(self, cond: bool, desc: str) -> bool:
        if cond:
            self.ok(desc)
        else:
            self.notok(desc)
        return cond

    def diag(self, text: str) -> None:
        """TEXT's lines as "# " lines (a trailing newline adds none)."""
        for line in text.splitlines():
            self.emit(f"# {line}")
