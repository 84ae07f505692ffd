# SPDX-License-Identifier: GPL-2.0
"""apt sources: is a suite there, and adding bookworm-backports and
bookworm's deb-src by copying the machine's own main Debian entry (so its
mirror is kept: the rig never names a host itself).  Both formats: deb822
.sources stanzas and one-line .list entries."""
from __future__ import annotations

import glob
import os
import re
from typing import List, Optional, Tuple

BASE = "bookworm"


def _files(etc: str, kinds: Tuple[str, ...]) -> List[str]:
    out: List[str] = []
    for kind in kinds:
        if kind == "list":
            out += [os.path.join(etc, "sources.list")]
            out += sorted(glob.glob(os.path.join(etc,
                                                 "sources.list.d/*.list")))
        else:
            out += sorted(glob.glob(os.path.join(etc,
                                                 "sources.list.d/*.sources")))
    return [f for f in out if os.path.isfile(f)]


def stanzas(text: str) -> List[List[str]]:
    """deb822 paragraphs: their lines, comments left out."""
    out: List[List[str]] = []
    for para in re.split(r"\n\s*\n", text):
        lines = [ln for ln in para.split("\n")
                 if ln and not ln.startswith("#")]
        if lines:
            out.append(lines)
    return out


def _field(lines: List[str], name: str) -> Optional[List[str]]:
    for ln in lines:
        if ln.lower().startswith(name.lower() + ":"):
            return ln.split(":", 1)[1].split()
    return None


def _enabled(lines: List[str]) -> bool:
    v = _field(lines, "Enabled")
    return not (v and v[0].lower() == "no")


def _matches(lines: List[str], typ: str, suite: str) -> bool:
    return (_enabled(lines) and suite in (_field(lines, "Suites") or [])
            and (typ == "" or typ in (_field(lines, "Types") or [])))


_ONE_LINE = r"^\s*{typ}\s+(\[[^]]*\]\s+)?\S+\s+{suite}(\s|$)"


def have(etc: str, suite: str, typ: str = "") -> bool:
    """An enabled source of SUITE (of type TYP: deb, deb-src; "" any in
    deb822, deb in one-line files)."""
    for f in _files(etc, ("list", "sources")):
        with open(f, encoding="utf-8", errors="replace") as fh:
            text = fh.read()
        if f.endswith(".sources"):
            if any(_matches(s, typ, suite) for s in stanzas(text)):
                return True
        elif re.search(_ONE_LINE.format(typ=re.escape(typ or "deb"),
                                        suite=re.escape(suite)),
                       text, re.MULTILINE):
            return True
    return False


def _copy_stanza(lines: List[str], typ: str, suite: Optional[str]) -> str:
    out = []
    for ln in lines:
        if ln.startswith("Types:"):
            ln = f"Types: {typ}"
        elif ln.startswith("Suites:") and suite:
            ln = f"Suites: {suite}"
        out.append(ln)
    return "\n".join(out) + "\n"


def _copy_line(text: str, typ: str, suite: Optional[str]) -> Optional[str]:
    for ln in text.split("\n"):
        w = ln.split()
        if not w or w[0] != "deb":
            continue
        i = 1
        if w[i].startswith("["):
            while not w[i].endswith("]") and i < len(w) - 1:
                i += 1
            i += 1
        if i + 1 < len(w) and w[i + 1] == BASE:
            w[0], w[i + 1] = typ, suite or BASE
            return " ".join(w) + "\n"
    return None


def add(etc: str, typ: str, suite: Optional[str],
        name: str) -> Tuple[str, str]:
    """Add a source of TYP and SUITE (None: the suites of the entry copied,
    as deb-src wants them), copied from the machine's enabled main bookworm
    deb entry, as sources.list.d/NAME.sources or .list.  Returns (the new
    file, the file copied).  ValueError if there is none."""
    for f in _files(etc, ("sources",)):
        with open(f, encoding="utf-8", errors="replace") as fh:
            for s in stanzas(fh.read()):
                if _matches(s, "deb", BASE):
                    out = os.path.join(etc, "sources.list.d",
                                       name + ".sources")
                    _write(out, _copy_stanza(s, typ, suite))
                    return out, f
    for f in _files(etc, ("list",)):
        with open(f, encoding="utf-8", errors="replace") as fh:
            line = _copy_line(fh.read(), typ, suite)
        if line:
            out = os.path.join(etc, "sources.list.d", name + ".list")
            _write(out, line)
            return out, f
    raise ValueError(f"no Debian {BASE} entry found in {etc}/sources.list "
                     f"or {etc}/sources.list.d/ to copy for "
                     f"{suite or typ}")


def _write(path: str, text: str) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
