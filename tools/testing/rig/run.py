# SPDX-License-Identifier: GPL-2.0
"""How make check runs a step: a host command whose output goes to a log,
a command whose TAP is counted, a background job; the result of each goes
to rig.results."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence

from . import tap
from .results import Results, seconds
from .tap import failure_lines

# Lines of a failed step's log shown on the console.
TAIL_LINES = 40


def tail(path: str, n: int = TAIL_LINES) -> List[str]:
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read().splitlines()[-n:]
    except OSError:
        return []


def indent(lines: Sequence[str], prefix: str) -> str:
    return "\n".join(prefix + line for line in lines)


@dataclass
class Runner:
    """Runs the steps of one make check and keeps their results."""
    root: str
    logs: str
    verbose: bool = False
    results: Results = field(default_factory=Results)
    background: Dict[str, subprocess.Popen[bytes]] = field(
        default_factory=dict)

    def say(self, text: str) -> None:
        print(text, flush=True)

    def log_path(self, name: str) -> str:
        return os.path.join(self.logs, name + ".log")

    def _run_to(self, cmd: Sequence[str], log: str,
                env: Optional[Dict[str, str]] = None) -> int:
        full_env = None if env is None else {**os.environ, **env}
        with open(log, "wb") as out:
            if not self.verbose:
                return subprocess.call(cmd, cwd=self.root, stdout=out,
                                       stderr=subprocess.STDOUT,
                                       stdin=subprocess.DEVNULL, env=full_env)
            p = subprocess.Popen(cmd, cwd=self.root, stdout=subprocess.PIPE,
                                 stderr=subprocess.STDOUT,
                                 stdin=subprocess.DEVNULL, env=full_env)
            assert p.stdout is not None
            fd = p.stdout.fileno()
            for chunk in iter(lambda: os.read(fd, 4096), b""):
                out.write(chunk)
                sys.stdout.buffer.write(chunk)
                sys.stdout.flush()
            return p.wait()

    def step(self, name: str, cmd: Sequence[str],
             env: Optional[Dict[str, str]] = None) -> bool:
        """A host step: one test.  Its output goes to logs/NAME.log and is
        shown (its end) only when it fails."""
        log = self.log_path(name)
        t0 = time.time()
        self.results.progress(f"{name}: {' '.join(cmd)}")
        rc = self._run_to(cmd, log, env)
        if rc == 0:
            self.results.passed(f"{name} ({seconds(t0)})")
            return True
        last = tail(log)
        with self.results.lock:
            self.results.failed(f"{name}: exit {rc} ({seconds(t0)})",
                                f"{name}: exit {rc} ({seconds(t0)}); "
                                f"last lines of {log}:",
                                ["| " + x for x in last[-8:]])
            self.say(indent(last, "    | "))
        return False

    def tap_step(self, name: str, rc: int, t0: float, detail: str,
                 files: Sequence[str]) -> bool:
        """A step made of TAP results: the counts of FILES, and one failure
        more when it failed (RC) without a failed result.  On a failure,
        the failed results and DETAIL (a command's output)."""
        streams = [tap.parse_file(f) for f in files if os.path.exists(f)]
        counts = tap.total(streams)
        ok, line = self.results.add_tap(name, counts, rc, t0,
                                        failure_lines(streams))
        if ok:
            self.say(f"ok      {line}")
            return True
        with self.results.lock:
            self.say(f"not ok  {line}, log {files[0] if files else '-'}")
            if detail:
                self.say(indent(detail.splitlines(), "    "))
            for s in streams:
                for f in s.failures:
                    self.say(f"    {s.name}: {f.what}")
                    self.say(indent(f.context, "        "))
        return False

    def run_tap(self, name: str, cmd: Sequence[str], tap_file: str,
                err_file: Optional[str] = None, detail_lines: int = 0,
                skip_on_77: bool = False) -> bool:
        """A rig script that writes TAP to TAP_FILE (its stdout) and its
        messages to ERR_FILE; exit 77 (nothing run) is a skip when
        SKIP_ON_77, with the script's last message as the reason."""
        t0 = time.time()
        err = err_file or tap_file + ".err"
        with open(tap_file, "wb") as out, open(err, "wb") as errf:
            rc = subprocess.call(cmd, cwd=self.root, stdout=out, stderr=errf,
                                 stdin=subprocess.DEVNULL)
        msgs = tail(err, detail_lines or TAIL_LINES)
        if skip_on_77 and rc == 77:
            self.results.skipped(name, msgs[-1] if msgs else "nothing run")
            return True
        return self.tap_step(name, rc, t0, "\n".join(msgs), [tap_file])

    def start_background(self, name: str, cmd: Sequence[str], log: str,
                         nice: int) -> None:
        """A job in a process group of its own (stop_background kills the
        group), under NICE unless 0, its output to LOG."""
        full = [*cmd] if nice == 0 else ["nice", "-n", str(nice), *cmd]
        with open(log, "wb") as out:
            self.background[name] = subprocess.Popen(
                full, cwd=self.root, stdout=out,
                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                start_new_session=True)

    def background_done(self, name: str) -> None:
        """Wait for a background job to end, if it runs; it stays for
        wait_background to reap (Popen.wait is safe from two threads)."""
        p = self.background.get(name)
        if p is not None:
            p.wait()

    def wait_background(self, name: str) -> Optional[int]:
        p = self.background.pop(name, None)
        return None if p is None else p.wait()

    def stop_background(self) -> None:
        for p in self.background.values():
            try:
                os.killpg(p.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        self.background.clear()
