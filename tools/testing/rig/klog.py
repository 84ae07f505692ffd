# SPDX-License-Identifier: GPL-2.0
"""The guest's kernel log and exit marker: what fails a refcnt-vm run.

The console log (the serial port) and the full dmesg the guest writes to
its second serial port at the end are scanned for kernel reports; the
exit marker /init prints last ("@@refcnt-vm-exit NONCE status=N
tainted=N reason=WORD kmemleak=N") gives the command's status."""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Dict, Iterable, List, Optional

# Kernel log lines (with their "[    1.234567] " timestamp) that fail a
# run.  The debug kernel's checkers head their reports with "WARNING:"
# (lockdep, RCU, debug objects) or "BUG:" (KASAN, KCSAN, sleeping in
# atomic context); the rest name them again, in case a report's first
# line is lost.  kmemleak is read at the end of the guest's command.
# KCSAN's reports are judged apart (kcsan_reports): its boot lines say
# "KCSAN" too.
BAD_RE = re.compile(
    r"Oops|WARNING:|BUG:|BUG [^ ]+ \(|kernel BUG|Kernel panic|"
    r"general protection fault|UBSAN|KASAN|list_add corruption|"
    r"list_del corruption|refcount_t:|Call Trace:|Unable to handle|"
    r"detected stall|blocked for more than|soft lockup|hard LOCKUP|"
    r"possible circular locking|possible recursive locking|"
    r"inconsistent lock state|lock held when returning|"
    r"suspicious RCU usage|sleeping function called from invalid context|"
    r"DEBUG_LOCKS_WARN_ON|INFO: lockdep is turned off")
STAMPED = re.compile(r"\[ *[0-9]+\.[0-9]+\] ")
# The KCSAN scan strips stamps the way its sed did (digits optional).
STAMP = re.compile(r"\[ *[0-9]*\.[0-9]*\] ")
# Taint bits that fail a run: W (warning, 512), D (oops, 128), B (bad
# page, 32), L (soft lockup, 16384), M (machine check, 16).  O and E
# (out-of-tree, unsigned module) are expected.
BAD_TAINT = 512 | 128 | 32 | 16384 | 16
# At most this many kernel lines in the failure reasons.
MAX_BAD = 8


def unique(lines: Iterable[str]) -> List[str]:
    seen: Dict[str, None] = {}
    for line in lines:
        seen.setdefault(line, None)
    return list(seen)


def split_lines(text: str) -> List[str]:
    """TEXT's lines as grep sees them: split at newlines only."""
    lines = text.split("\n")
    return lines[:-1] if lines and lines[-1] == "" else lines


def kernel_lines(lines: Iterable[str]) -> List[str]:
    """The timestamped lines, their stamp removed."""
    out = []
    for line in lines:
        m = STAMP.match(line)
        if m:
            out.append(line[m.end():])
    return out


# The line before each racing access's stack in a KCSAN report.
KCSAN_ACCESS = re.compile(r".* by (task [0-9]+|interrupt) on cpu [0-9]+:$")


def kcsan_reports(lines: Iterable[str], ours: bool) -> List[str]:
    """The headlines of the distinct KCSAN reports whose racing accesses
    refcnt makes (OURS): its function in the headline, or atop either
    access's stack; or of the others.  A race inside the kernel's own
    functions that refcnt called (vm_insert_page() against rmap, say) is
    the kernel's, whatever called it."""
    heads: List[str] = []
    head, named, inside, top = "", False, False, False
    for line in kernel_lines(lines):
        if line.startswith("BUG: KCSAN: "):
            head, named, inside = line, "refcnt" in line, True
            continue
        if inside and top and line.strip():
            named = named or "refcnt" in line
            top = False
        if inside and KCSAN_ACCESS.match(line):
            top = True
        if inside and line.startswith("===="):
            inside = False
            if named == ours:
                heads.append(head)
    return unique(heads)


def bad_lines(lines: List[str]) -> List[str]:
    """The kernel reports that fail the run: stamped lines BAD_RE
    matches, KCSAN's only for reports naming refcnt."""
    bad = [x for x in lines if STAMPED.match(x) and BAD_RE.search(x)
           and "BUG: KCSAN: " not in x]
    return unique(bad + kcsan_reports(lines, True))[:MAX_BAD]


@dataclass
class Marker:
    """The exit marker's fields ("" where missing)."""
    status: str = ""
    tainted: str = ""
    reason: str = ""
    kmemleak: int = 0


def find_marker(text: str, nonce: str) -> Optional[Marker]:
    """The last marker of this run (not anchored: a kernel message may
    land on the same console line)."""
    found = re.findall(f"@@refcnt-vm-exit {re.escape(nonce)} .*", text)
    if not found:
        return None
    line = found[-1]

    def field_(name: str, pat: str) -> str:
        m = re.search(f"{name}=({pat})", line)
        return m.group(1) if m else ""
    leaks = field_("kmemleak", "[0-9]+")
    return Marker(field_("status", "[0-9]+"), field_("tainted", "[0-9]+"),
                  field_("reason", "[a-z]+"), int(leaks) if leaks else 0)


def insmod_lines(serial: List[str]) -> List[str]:
    """busybox's insmod error, then the module's own lines once each."""
    out = [x for x in serial if x.startswith("insmod: ")][:2]
    ours: Dict[str, str] = {}
    for x in serial:
        if re.match(r"\[ *[0-9.]+\] refcnt", x) and "taint" not in x.lower():
            ours.setdefault(re.sub(r"^\[[^]]*\] ", "", x, count=1), x)
    return out + list(ours.values())[:5]


@dataclass
class Outcome:
    """What QEMU left: its exit status (124 or 137: timeout), its stderr,
    the console log and the guest's dmesg."""
    qrc: int
    qemu_err: str
    serial: str
    dmesg: str
    timeout_s: str = "900"
    modparams: str = ""
    reasons: List[str] = field(default_factory=list)


def no_marker_reason(o: Outcome) -> str:
    if o.qrc in (124, 137):
        return (f"timeout: no exit marker after {o.timeout_s}s "
                "(guest hung or too slow)")
    for line in split_lines(o.qemu_err):
        if line.startswith("refcnt-truth: "):
            # The plugin's own reason, not QEMU's "could not load".
            return line
    if o.qemu_err:
        err = o.qemu_err[:2000].rstrip("\n")
        return f"QEMU failed (exit {o.qrc}): {err}"
    return ("the guest stopped before the command finished (crash or "
            f"panic; QEMU exit {o.qrc})")


def reasons(o: Outcome, marker: Optional[Marker]) -> List[str]:
    """Why the run failed, one line each (none: it passed)."""
    serial = split_lines(o.serial)
    why: List[str] = []
    bad = bad_lines(serial + split_lines(o.dmesg.replace("\r", "")))
    if bad:
        why.append("the guest kernel reported:")
        why += ["    " + x for x in bad]
    m = marker or Marker()
    if m.tainted and int(m.tainted) & BAD_TAINT:
        why.append(f"the guest kernel is tainted ({m.tainted}: warning, "
                   "oops, bad page, lockup or machine check)")
    if marker is None:
        why.append(no_marker_reason(o))
    if m.kmemleak > 0:
        why.append(f"kmemleak: {m.kmemleak} unreferenced objects after the "
                   "command (listed in the log after \"refcnt-vm: "
                   "kmemleak:\")")
    if m.reason == "insmod":
        params = f" {o.modparams}" if o.modparams else ""
        why.append(f"refcnt.ko failed to load in the guest (insmod{params}):")
        why += ["    " + x for x in insmod_lines(serial)]
    elif m.reason == "rmmod":
        why.append("rmmod refcnt failed after the command")
    elif m.reason == "root":
        why.append("the Debian root was not mounted (--debian; see the "
                   "FATAL line)")
    return why
