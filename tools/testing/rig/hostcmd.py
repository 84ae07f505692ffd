# SPDX-License-Identifier: GPL-2.0
"""What the rig's host commands share (hub-check, papi-check, hub-bench,
truth-check, trace-check, trace-bench; lib/rig.sh for the shell ones):
their options, messages, the kernel they boot, refcnt-vm's path, the
files they read and the benchmarks' results files."""
from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional, Sequence

from . import guestout, kernels, qemu
from .fleethost import head_bytes as head_bytes  # noqa: F401 (callers use H.head_bytes)
from .fleethost import read as read


class Die(Exception):
    """"PROG: error: MESSAGE" on stderr, and exit STATUS."""

    def __init__(self, msg: str, status: int = 2) -> None:
        super().__init__(msg)
        self.status = status


class Help(Exception):
    """-h or --help: print the usage, exit 0."""


@dataclass
class Options:
    """The options of a command line, as the scripts' case loops took
    them: VALUES take an argument (the last one counts; those in MULTI
    gather every one), FLAGS none; anything else is an error."""
    values: Dict[str, str] = field(default_factory=dict)
    multi: Dict[str, List[str]] = field(default_factory=dict)
    flags: Dict[str, bool] = field(default_factory=dict)


def parse(argv: Sequence[str], values: Sequence[str] = (),
          flags: Sequence[str] = (), multi: Sequence[str] = (),
          die_status: int = 2) -> Options:
    o = Options()
    i = 0
    while i < len(argv):
        a = argv[i]
        if a in ("-h", "--help"):
            raise Help()
        if a in values or a in multi:
            if i + 1 >= len(argv):
                raise Die(f"{a} needs an argument", die_status)
            if a in multi:
                o.multi.setdefault(a, []).append(argv[i + 1])
            else:
                o.values[a] = argv[i + 1]
            i += 2
            continue
        if a in flags:
            o.flags[a] = True
            i += 1
            continue
        raise Die(f"unknown argument '{a}'", die_status)
    return o


def build_dir(root: str) -> str:
    return os.environ.get("REFCNT_BUILD_DIR") or os.path.join(root, "build")


def refcnt_vm(root: str) -> str:
    return os.path.join(root, "tools/testing/refcnt-vm")


def default_kernel(root: str) -> str:
    """refcnt-setup kernels' first: Debian's 6.1."""
    try:
        return kernels.debian_releases(root)[0]
    except (subprocess.CalledProcessError, IndexError, OSError):
        raise Die("cannot resolve the default kernel (run "
                  "'tools/testing/refcnt-setup deps' as root)")


def release(kernel: str) -> str:
    """The release of a refcnt-vm --kernel argument: a Debian release as
    it is; for a path, that of the build tree it sits in, else its name
    after "vmlinuz-"."""
    if "/" not in kernel and not os.path.isfile(kernel):
        return kernel
    return qemu.kernel_release(kernel)


def lines(path: str) -> List[str]:
    """PATH's lines, without their carriage returns (a guest's console
    log has them)."""
    text = read(path).replace("\r", "")
    if text.endswith("\n"):
        text = text[:-1]
    return text.split("\n") if text else []


def tail(path: str, n: int) -> List[str]:
    return lines(path)[-n:]


def grep_after(text_lines: Sequence[str], pattern: str,
               after: int) -> List[str]:
    """grep -A AFTER PATTERN: the matching lines and AFTER after each,
    "--" between groups that do not touch."""
    out: List[str] = []
    last = -1
    for i, line in enumerate(text_lines):
        if not re.search(pattern, line):
            continue
        start = max(i, last + 1)
        if out and start > last + 1:
            out.append("--")
        end = min(len(text_lines) - 1, i + after)
        out.extend(text_lines[start:end + 1])
        last = max(last, end)
    return out


def num(s: str) -> float:
    """awk's value of a string: its leading number, else 0."""
    m = re.match(r"\s*[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?", s)
    return float(m.group(0)) if m else 0.0


def shell_int(s: str) -> int:
    """A number as bash's $((...)) reads it: 0x hex, 0 octal, decimal."""
    s = s.strip()
    if s.lower().startswith("0x"):
        return int(s, 16)
    if len(s) > 1 and s.startswith("0"):
        return int(s, 8)
    return int(s)


def call(cmd: Sequence[str], out: Optional[str] = None,
         err: Optional[str] = None, both: Optional[str] = None,
         cwd: Optional[str] = None) -> int:
    """CMD with stdin empty, stdout to OUT, stderr to ERR (or both to
    BOTH); None: inherited.  127 and a line on its stderr when it cannot
    run, as the shell says it."""
    files = []
    try:
        so = se = None
        if both is not None:
            f = open(both, "wb")
            files.append(f)
            so = se = f
        if out is not None:
            so = open(out, "wb")
            files.append(so)
        if err is not None:
            se = open(err, "wb")
            files.append(se)
        sys.stdout.flush()
        try:
            return subprocess.call(cmd, stdout=so, stderr=se, cwd=cwd,
                                   stdin=subprocess.DEVNULL)
        except OSError as x:
            msg = f"{cmd[0]}: {x.strerror}\n"
            if se is not None:
                se.write(msg.encode())
            else:
                sys.stderr.write(msg)
            return 126 if isinstance(x, PermissionError) else 127
    finally:
        for f in files:
            f.close()


def results_start(build: str, root: str, bench: str, kernel: str,
                  prog: str, args: Sequence[str]) -> str:
    """A benchmark's results file and its head (guestout.results_file)."""
    return guestout.results_file(build, root, bench, kernel, prog, args)


def quote(cmd: Sequence[str]) -> str:
    return " ".join(shlex.quote(c) for c in cmd)


class Tee:
    """Lines to stdout and appended to a results file."""

    def __init__(self, path: str) -> None:
        self.path = path

    def __call__(self, text: str = "") -> None:
        print(text, flush=True)
        with open(self.path, "a") as f:
            f.write(text + "\n")


def usage(doc: Optional[str]) -> str:
    return (doc or "").strip("\n") + "\n"


def entry(prog: str, main: Callable[[Sequence[str], str], int], argv: Sequence[str], root: str,
          doc: Optional[str], die_status: int = 2) -> int:
    """Run MAIN(ARGV, ROOT) as command PROG: --help prints DOC, a Die its
    message."""
    try:
        return main(argv, root)
    except Help:
        sys.stdout.write(usage(doc))
        return 0
    except Die as e:
        print(f"{prog}: error: {e}", file=sys.stderr, flush=True)
        return e.status
