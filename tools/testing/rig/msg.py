# SPDX-License-Identifier: GPL-2.0
"""The messages of refcnt-vm and its modules: one line on stderr each,
prefixed with the program's name (tools/testing/lib/rig.sh's say and die)."""
from __future__ import annotations

import sys

PROG = "refcnt-vm"


class Error(Exception):
    """A run that cannot go on: "PROG: error: MESSAGE", exit status 2."""


def say(text: str) -> None:
    print(f"{PROG}: {text}", file=sys.stderr, flush=True)
