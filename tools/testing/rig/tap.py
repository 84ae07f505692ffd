# SPDX-License-Identifier: GPL-2.0
"""TAP results as kselftest writes them, counted per stream.

What counts (the rules make check has always applied to guest logs):
lines at column 0 "ok N ..." (passed; "# SKIP" skipped), "not ok N ..."
(failed; "# TODO" or "# SKIP" skipped) and "Bail out!" (failed).  Indented
or "#" lines (nested subtests, diagnostics) and kernel log lines do not
count: a nested result is summed up by its parent line.  A plan "1..N"
that announces more results than were given (the program died) counts one
more failure, also when the plan comes last.  Carriage returns are ignored.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Iterable, List, Sequence

_PLAN = re.compile(r"1\.\.([0-9]+)")
_NOT_OK = re.compile(r"not ok([ \t]|$)")
_OK = re.compile(r"ok([ \t]|$)")
_SKIP = re.compile(r"#[ \t]*skip", re.IGNORECASE)
_TODO_OR_SKIP = re.compile(r"#[ \t]*(todo|skip)", re.IGNORECASE)

# Lines a failure shows of what its test printed before it.
CONTEXT_LINES = 12


@dataclass
class Counts:
    passed: int = 0
    failed: int = 0
    skipped: int = 0

    def __iadd__(self, other: Counts) -> Counts:
        self.passed += other.passed
        self.failed += other.failed
        self.skipped += other.skipped
        return self

    def line(self) -> str:
        return (f"{self.passed} passed, {self.failed} failed, "
                f"{self.skipped} skipped")


@dataclass
class Failure:
    """A failed result, or a stream that stopped before its plan."""
    what: str
    context: List[str] = field(default_factory=list)
    # "#" lines right after it: TAP 13 and python's checks put the
    # failure's diagnostics there, kselftest puts them before.
    after: List[str] = field(default_factory=list)


@dataclass
class Stream:
    name: str
    counts: Counts = field(default_factory=Counts)
    failures: List[Failure] = field(default_factory=list)


class _Parser:
    def __init__(self, name: str) -> None:
        self.stream = Stream(name)
        self.plan = 0
        self.results = 0
        self.context: List[str] = []
        self.last_failure: Failure | None = None

    def close_plan(self) -> None:
        if self.plan > 0 and self.results < self.plan:
            self.stream.counts.failed += 1
            self.stream.failures.append(Failure(
                f"incomplete: {self.results} of {self.plan} planned results"))
        self.plan = 0
        self.results = 0

    def line(self, text: str) -> None:
        text = text.rstrip("\r\n").rstrip("\r")
        counts = self.stream.counts
        m = _PLAN.match(text)
        if m:
            # TAP allows the plan after its results: then it closes them.
            if self.plan == 0 and self.results > 0:
                self.plan = int(m.group(1))
                self.close_plan()
                return
            self.close_plan()
            self.plan = int(m.group(1))
            self.last_failure = None
            return
        if text.startswith("Bail out!"):
            counts.failed += 1
            self.stream.failures.append(Failure(text))
            return
        if _NOT_OK.match(text):
            self.results += 1
            if _TODO_OR_SKIP.search(text):
                counts.skipped += 1
            else:
                counts.failed += 1
                self.last_failure = Failure(text, self.context[-CONTEXT_LINES:])
                self.stream.failures.append(self.last_failure)
            self.context = []
            return
        if _OK.match(text):
            self.results += 1
            self.context = []
            self.last_failure = None
            if _SKIP.search(text):
                counts.skipped += 1
            else:
                counts.passed += 1
            return
        f = self.last_failure
        if f is not None:
            if text.startswith("#") and len(f.after) < CONTEXT_LINES:
                f.after.append(text)
            elif not text.startswith("#"):
                self.last_failure = None
        self.context.append(text)
        # What a failure shows is the end of it: keep the list short.
        if len(self.context) > 4 * CONTEXT_LINES:
            del self.context[:-CONTEXT_LINES]


def parse(lines: Iterable[str], name: str = "-") -> Stream:
    """Count the TAP results of one stream (a guest log, a TAP file)."""
    p = _Parser(name)
    for text in lines:
        p.line(text)
    p.close_plan()
    return p.stream


def parse_file(path: str) -> Stream:
    with open(path, encoding="utf-8", errors="replace", newline="") as f:
        return parse(_split_lines(f.read()), path)


def _split_lines(text: str) -> List[str]:
    # Only newlines end a line: a lone CR is not TAP's business.
    return text.split("\n") if text else []


def total(streams: Iterable[Stream]) -> Counts:
    c = Counts()
    for s in streams:
        c += s.counts
    return c


# Diagnostics kept per failure in a step's summary.
WHY_PER_FAILURE = 6


def failure_lines(streams: Sequence[Stream]) -> List[str]:
    """Each failed result of STREAMS and the last diagnostics before it:
    what make check's summary repeats under a failed step."""
    out: List[str] = []
    for s in streams:
        for f in s.failures:
            out.append(f"{s.name}: {f.what}")
            # What follows a failure is its own; what precedes it may be
            # the build's or the previous test's output.
            why = f.after[:WHY_PER_FAILURE] or f.context[-WHY_PER_FAILURE:]
            out += ["  " + c.strip() for c in why]
    return out
