# SPDX-License-Identifier: GPL-2.0
"""rig.papicheck: the guest's command and refcnt-vm arguments, the
sections of its log and the checks made of them."""
from __future__ import annotations

import io
import os
import tempfile
import unittest

from rig import papicheck as pc
from rig import tapout

UPTIME = "echo papi-check: uptime $(cut -d' ' -f1 /proc/uptime); "


class Command(unittest.TestCase):
    def test_filtered(self) -> None:
        self.assertEqual(pc.guest_command(True, ("a", "b")), (
            "echo 0 >/sys/module/refcnt_hub/parameters/enable; "
            "./hub-pmu off >/dev/null; "
            f"{UPTIME}echo papi-check: begin a; REFCNT_HUB_FILTER=1 ./a; "
            "echo papi-check: end a $?; "
            f"{UPTIME}echo papi-check: begin b; REFCNT_HUB_FILTER=1 ./b; "
            "echo papi-check: end b $?; "
            f"{UPTIME}./hub-pmu refs >/dev/null; "
            "echo 1 >/sys/module/refcnt_hub/parameters/enable;"))

    def test_unfiltered(self) -> None:
        self.assertEqual(pc.guest_command(False, ("a",)), (
            "echo 0 >/sys/module/refcnt_hub/parameters/enable; "
            "./hub-pmu refs-user >/dev/null; "
            f"{UPTIME}echo papi-check: begin a; ./a; "
            "echo papi-check: end a $?; "
            f"{UPTIME}./hub-pmu refs >/dev/null; "
            "echo 1 >/sys/module/refcnt_hub/parameters/enable;"))

    def test_guest_args(self) -> None:
        with tempfile.TemporaryDirectory() as d:
            args = pc.guest_args("/b", True, f"{d}/w")
            self.assertTrue(os.path.isdir(f"{d}/w"))
        self.assertEqual(args[:4], ["--file", "/b/truth/hub-pmu:/refcnt/hub-pmu",
                                    "--file", "/b/papi/bin/papi_component_avail:"
                                    "/refcnt/papi_component_avail"])
        self.assertEqual(len(args), 2 * (1 + len(pc.PROGS)) + 4 + 1)
        self.assertEqual(args[-5:-1], ["--hub-records", "262144", "--vtruth",
                                       f"{d}/w/vt"])
        self.assertEqual(args[-1], pc.guest_command(True))

    def test_options(self) -> None:
        o = pc.parse_args(["--filter", "--work", "w", "--parse"], "/b")
        self.assertEqual((o.filter, o.parse, o.host, o.work, o.log, o.timeout),
                         (True, True, False, "w", "/b/logs/papi.log", "1200"))


def log(progs: dict[str, list[str]]) -> list[str]:
    out = ["[ 1.0] boot"]
    t = 10.0
    for p in pc.PROGS:
        out.append(f"papi-check: uptime {t:.2f}")
        t += 2.5
        if p in progs:
            out += [f"papi-check: begin {p}", *progs[p],
                    f"papi-check: end {p} 0"]
    return out + [f"papi-check: uptime {t:.2f}"]


COMP = ["Name: perf_event", "Name:   refcnt    Per-page counters",
        "  Native: 6"]
NATIVE = [f"| refcnt:::{e}" for e in pc.EVENTS]
PAPI_TEST = ["TAP version 13", "1..2", "ok 1 papi.events", "# x",
             "not ok 2 papi.read", "#   broken"]


class Sections(unittest.TestCase):
    def test_sections_and_uptimes(self) -> None:
        lines = log({"papi_component_avail": COMP, "papi_test": PAPI_TEST})
        s = pc.sections(lines)
        self.assertEqual(s["papi_component_avail"], (COMP, "0"))
        self.assertEqual(s["data_range-truth"], ([], None))
        self.assertEqual(pc.uptimes(lines), (
            "# the programs took 12s of the guest's time: "
            "papi_component_avail 2s, papi_native_avail 2s, papi_test 2s, "
            "data_range-truth 2s, instr_range-truth 2s"))
        self.assertIsNone(pc.uptimes(lines[:-1]))

    def test_component(self) -> None:
        self.assertTrue(pc.component_enabled(COMP))
        self.assertFalse(pc.component_enabled(
            ["Name: refcnt", "  x", "  disabled: no refcnt.ko"]))
        self.assertFalse(pc.component_enabled(["Name: perf_event"]))

    def test_component_disabled(self) -> None:
        """papi_component_avail's own words for a disabled component
        (papi_component_avail.c: "   \\-> Disabled: %s")."""
        self.assertFalse(pc.component_enabled(
            ["Name:   refcnt                  refcnt.ko memory references",
             "   \\-> Disabled: refcnt.ko is not loaded"]))
        self.assertEqual(pc.missing_events(NATIVE[1:4]),
                         ["references", "stores", "lost"])

    def test_tap(self) -> None:
        self.assertEqual(pc.tap_results(PAPI_TEST),
                         [(True, "papi.events"), (False, "papi.read")])

    def test_check_log(self) -> None:
        """A log whose examples did not run: what the TAP says."""
        with tempfile.TemporaryDirectory() as d:
            path = f"{d}/log"
            with open(path, "w") as f:
                f.write("\n".join(log({"papi_component_avail": COMP,
                                       "papi_native_avail": NATIVE[:5],
                                       "papi_test": PAPI_TEST})) + "\n")
            out = io.StringIO()
            w = tapout.Writer(out)
            pc.check_log("/nonexistent", path, d, "6.1/four", w)
        self.assertEqual(out.getvalue().split("\n")[1:], [
            "ok 1 papi_component_avail lists refcnt, enabled",
            "not ok 2 papi_native_avail lists refcnt:::{references,local,"
            "remote,loads,stores,lost} (missing: lost)",
            "ok 3 papi.events",
            "not ok 4 papi.read", f"#   see {path}",
            "not ok 5 data_range == truth 6.1/four", "#   exit none", "#   ",
            "not ok 6 data_range with its data ranges a page off != truth: "
            "/nonexistent/tools/testing/papi-window-check: No such file or "
            "directory",
            "not ok 7 instr_range == truth 6.1/four", "#   exit none", "#   ",
            ""])
