# SPDX-License-Identifier: GPL-2.0
"""refcnt-doc-check: the documentation's kernel-doc directives name what
exists.  Part of `make kernel-doc` (and so of make check).

The documents pull structures and functions out of the sources with
Sphinx's kernel-doc directive, as the kernel's do::

  .. kernel-doc:: uapi/linux/refcnt.h
     :identifiers: rcb_info rcb_slot

The docs are not built here (no Sphinx in the rig), so this runs the
kernel's scripts/kernel-doc for every directive as the Sphinx extension
would: the file must exist (relative to the top of the tree), every name
of :identifiers: or :functions: must give a definition, a :doc: section
must exist, and kernel-doc must not warn.  One line per problem on
stderr; exit status 1 if there is any."""
from __future__ import annotations

import glob
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from typing import Iterable, List, Optional, Sequence

PROG = "refcnt-doc-check"

_DIRECTIVE = re.compile(r"\.\. kernel-doc:: ")
_OPTION = re.compile(r"   :[a-z-]+:")


@dataclass(frozen=True)
class Option:
    """One option of a directive at FILE:LINE on SOURCE; an option-less
    directive gives one with OPT "-"."""
    file: str
    line: int
    source: str
    opt: str
    value: str

    @property
    def where(self) -> str:
        return f"{self.file}:{self.line}: {self.source}"


def directives(name: str, text: str) -> List[Option]:
    """The options of each directive of one document: a directive's
    option lines follow it, indented by three spaces."""
    out: List[Option] = []
    src, line, opts = "", 0, False

    def flush() -> None:
        if src and not opts:
            out.append(Option(name, line, src, "-", ""))

    for n, text_line in enumerate(text.split("\n"), 1):
        if _DIRECTIVE.match(text_line):
            flush()
            f = text_line.split()
            src, line, opts = (f[2] if len(f) > 2 else ""), n, False
        elif src and _OPTION.match(text_line):
            f = text_line.split()
            out.append(Option(name, line, src, f[0].replace(":", ""),
                              " ".join(f[1:])))
            opts = True
        else:
            flush()
            src = ""
    flush()
    return out


@dataclass(frozen=True)
class Run:
    """A kernel-doc run: WHAT names it in a problem; its output must
    contain WANT (if any); ARGS follow kernel-doc's -rst options."""
    what: str
    want: str
    args: List[str]


def runs(o: Option) -> Optional[List[Run]]:
    """The kernel-doc runs an option needs; None for an unknown one."""
    if o.opt in ("identifiers", "functions"):
        return [Run(i, i, ["-function", i, o.source])
                for i in o.value.split()]
    if o.opt == "doc":
        return [Run(f"DOC: {o.value}", "", ["-function", o.value, o.source])]
    if o.opt in ("export", "internal", "no-identifiers"):
        return [Run(f":{o.opt}:", "", [o.source])]
    if o.opt == "-":
        return [Run("the whole file", "", [o.source])]
    return None


def judge(r: Run, out: str, err: str) -> Optional[str]:
    """The problem with one run's output and stderr, or None: the name
    must be in the output, and stderr must have no line."""
    if r.want and r.want not in out:
        return f"{r.what}: kernel-doc finds no such documented name"
    said = [line for line in err.split("\n") if line][:3]
    if said:
        return f"{r.what}: {''.join(line + ' ' for line in said)}"
    return None


def kernel_doc(kdoc: str,
               args: Sequence[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["perl", kdoc, "-rst", "-sphinx-version", "3.0",
                           *args], capture_output=True, text=True,
                          errors="replace")


class Checker:
    def __init__(self, kdoc: str) -> None:
        self.kdoc = kdoc
        self.bad = False
        self.options = 0

    def problem(self, msg: str) -> None:
        print(f"{PROG}: {msg}", file=sys.stderr, flush=True)
        self.bad = True

    def check(self, o: Option) -> None:
        self.options += 1
        if not os.path.isfile(o.source):
            self.problem(f"{o.where}: no such file")
            return
        todo = runs(o)
        if todo is None:
            self.problem(f"{o.where}: unknown option :{o.opt}:")
            return
        for r in todo:
            p = kernel_doc(self.kdoc, r.args)
            msg = judge(r, p.stdout, p.stderr)
            if msg:
                self.problem(f"{o.where}: {msg}")

    def check_files(self, rsts: Iterable[str]) -> None:
        for rst in rsts:
            try:
                with open(rst, encoding="utf-8", errors="replace") as f:
                    text = f.read()
            except OSError as e:
                # As the awk of the bash original did: said, not a problem.
                print(f"{PROG}: cannot open {rst} ({e.strerror})",
                      file=sys.stderr)
                continue
            for o in directives(rst, text):
                self.check(o)


def main(argv: Sequence[str], root: str) -> int:
    """refcnt-doc-check KERNEL-DOC [RST...] (default Documentation/*.rst);
    paths relative to the top of the tree."""
    if not argv:
        print(f"{PROG}: usage: {PROG} KERNEL-DOC [RST...]", file=sys.stderr)
        return 1
    os.chdir(root)
    kdoc, rsts = argv[0], list(argv[1:])
    if not rsts:
        rsts = sorted(glob.glob("Documentation/*.rst"))
    if not os.path.isfile(kdoc):
        print(f"{PROG}: error: no kernel-doc at {kdoc} (make kernel-doc "
              "extracts it)", file=sys.stderr)
        return 1
    c = Checker(kdoc)
    c.check_files(rsts)
    if c.bad:
        return 1
    print(f"  DOC-CHECK {c.options} kernel-doc directive options in "
          f"{len(rsts)} documents name documented code")
    return 0
