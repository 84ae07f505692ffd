# SPDX-License-Identifier: GPL-2.0
"""make check and make check-long: the plan (what runs, in which order,
needing what) and its steps.  The guest runs go through refcnt-vm and the
rig's other scripts; their TAP is counted by rig.tap."""
from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from functools import partial
from typing import Callable, Dict, List, Optional, Sequence

from . import cross, guestlibs
from . import kernels as K
from . import papicheck
from .hostcmd import Die
from .kernels import Kernel
from .results import seconds
from .run import Runner, tail
from .suite import Step

GUEST_TIMEOUT = 1200

# The selftests' long variants, in their own knobs (selftests/refcnt):
# fuzz_test's million calls and lifecycle_stress_test's 100 cycles on
# four nodes, and the ENOMEM load.  SHORT_VARIANTS runs them at their
# size on any other topology; the debug kernel leaves the ENOMEM load out
# too: it checks that memory comes back to within 2 MiB, which KASAN's
# quarantine of freed objects does not let it do.
SHORT_VARIANTS = "REFCNT_FUZZ_CALLS=50000 REFCNT_LIFECYCLE_CYCLES=20"
DEBUG_VARIANTS = SHORT_VARIANTS + " REFCNT_ENOMEM_TEST=0"
# stress_test's injection against resets: a use after free it once found
# showed under KASAN only after a minute or more of it (check-long, debug).
DEBUG_LONG_VARIANTS = DEBUG_VARIANTS + " REFCNT_RACE_SECONDS=90"

# On 72 nodes make check runs the tests whose subject changes above 64
# nodes (devices, numbering, counters per group of 8 nodes, the reports
# and tools that label them); check-long runs every test there.
TESTS_72 = ("devices_test info_test slots_test ioctl_errors_test mmap_test"
            " counters_test events_test lib_info_test lib_range_test"
            " lib_datarange_test feeds_test tools_test exporter_test"
            " refcntd_test").split()

# On one node make check leaves out, besides hotplug_test, the stress
# tests and load cycles, whose subject does not change with the number of
# nodes (they run on four, and in check-long on one too).
ONE_LEAVES_OUT = ("hotplug_test lifecycle_test lifecycle_stress_test"
                  " fuzz_test stress_test fault_stress_test").split()

# hotplug_test runs in the hotplug boots only (check-long: in every
# boot); on the debug kernel, where a memory cycle under KASAN takes
# seconds, make check runs this many cycles rather than 100.
HOTPLUG_DEBUG_CYCLES = 25

# The arm64 guest (check-long): nodes 0 and 1 with memory and a CPU, node
# 2 memory only, as Grace's HBM or CXL memory; and the selftests it runs:
# the list but hotplug_test (QEMU's virt machine has no memory hotplug
# without firmware: it would only skip) and the -m32 builds (the arm64
# cross build makes none; a new test runs there unless left out here).
ARM64_TOPOLOGY = "tiered"
ARM64_LEAVES_OUT = ("hotplug_test", "info_test32", "slots_test32",
                    "ioctl_errors_test32")

# The truth plugin's topologies (72 nodes are refused: a bad-input test).
TRUTH_TOPOLOGIES = "one four four-dense"

# The hub tests of make check on the debug kernel: every path of the hub
# driver but the exact windows (exact, pmu_stream, pmu_samples,
# pmu_session, granularity_256), whose every record must fit one ring:
# under KASAN the kernel's own references overrun it.  check-long runs
# them (HUB_EXACT_TESTS) with larger rings (HUB_DEBUG_RECORDS), and
# refcntd_pmu_test.
HUB_DEBUG_TESTS = ("real_rates reload_streaming unbind_rebind"
                   " foreign_left_alone host_garbage")
HUB_EXACT_TESTS = "exact pmu_stream pmu_samples pmu_session granularity_256"
HUB_DEBUG_RECORDS = 512 * 1024

DEMO_CHECK = """rm -f build/demo-*.png build/demo-report.html &&
make --no-print-directory demo >build/logs/demo.out 2>&1 &&
grep -q "make_misplaced .*-> move it to node" build/logs/demo.out &&
grep -q "counted by the hub feed" build/logs/demo.out &&
test -s build/demo-regions.png && test -s build/demo-physical.png &&
test -s build/demo-report.html"""


@dataclass
class Config:
    root: str
    build: str
    long: bool = False
    verbose: bool = False
    deps: bool = True
    # Debian releases, first (6.1) then second (6.12); "debug" if in.
    debian: List[str] = field(default_factory=list)
    debug: bool = True
    topologies: List[str] = field(default_factory=list)
    guest_timeout: int = GUEST_TIMEOUT
    is_root: bool = field(default_factory=lambda: os.geteuid() == 0)

    @property
    def logs(self) -> str:
        return os.path.join(self.build, "logs")

    @property
    def first(self) -> Optional[str]:
        return self.debian[0] if self.debian else None

    @property
    def second(self) -> Optional[str]:
        return self.debian[1] if len(self.debian) > 1 else None


def tests_but(build: str, leave_out: Sequence[str]) -> str:
    """run_tests.sh's command for the selftests but those named."""
    with open(os.path.join(build, "selftests/tests.list")) as f:
        tests = [t for t in f.read().split() if t not in leave_out]
    return "./run_tests.sh " + " ".join(tests)


def _has_target(makefile: str, target: str) -> bool:
    try:
        with open(makefile) as f:
            return any(line.startswith(target + ":") for line in f)
    except OSError:
        return False


class Check:
    """The steps of one run, bound to its configuration and runner."""

    def __init__(self, cfg: Config, runner: Runner) -> None:
        self.cfg = cfg
        self.r = runner
        self.kernels: Dict[str, Kernel] = {k: K.debian(k) for k in cfg.debian}

    # --- paths and small helpers -------------------------------------------

    def path(self, *parts: str) -> str:
        return os.path.join(self.cfg.build, *parts)

    def tool(self, name: str) -> str:
        return os.path.join(self.cfg.root, "tools/testing", name)

    def exists(self, rel: str) -> bool:
        return os.path.exists(os.path.join(self.cfg.root, rel))

    def make(self, name: str, *args: str) -> bool:
        return self.r.step(name, ["make", "--no-print-directory", *args])

    def truth_built(self, so: str = "refcnt-truth.so") -> bool:
        if os.path.exists(self.path("truth", so)):
            return True
        return self.make("truth-build", "truth")

    # --- background jobs ---------------------------------------------------

    def debug_kernel_start(self) -> None:
        self.debug_t0 = time.time()
        if not self.cfg.debug or K.built_dir(self.cfg.root) is not None:
            return
        log = self.r.log_path("debug-kernel")
        self.r.results.progress(
            f"debug-kernel: building in the background (log {log})")
        self.r.start_background("debug-kernel",
                                [self.tool("refcnt-debug-kernel"), "build"],
                                log, nice=0)

    def built_kernel_start(self, variant: str) -> None:
        """The build of VARIANT (kcsan, pmu-6.12), started now in the
        background; it waits for the debug kernel's (one build at a time:
        the cache's lock), so they build one after the other beside the
        guests instead of in the foreground."""
        if K.built_dir(self.cfg.root, variant) is not None:
            return
        log = self.r.log_path(f"debug-kernel-{variant}")
        self.r.results.progress(
            f"debug-kernel-{variant}: building in the background after the "
            f"debug kernel (log {log})")
        self.r.start_background(f"debug-kernel-{variant}",
                                [self.tool("refcnt-debug-kernel"),
                                 "--variant", variant, "build"],
                                log, nice=0)

    def debug_kernel_wait(self) -> Optional[Kernel]:
        """Wait for the build; one step.  None if there is no kernel."""
        t0 = time.time()
        res = self.r.results
        if "debug-kernel" not in self.r.background:
            k = K.built(self.cfg.root)
            if k is not None:
                res.passed(f"debug-kernel: cached ({k.release})")
                return k
            res.failed("debug-kernel: no debug kernel "
                       "(tools/testing/refcnt-debug-kernel build)")
            return None
        res.progress("debug-kernel: waiting for the build")
        rc = self.r.wait_background("debug-kernel")
        waited = int(time.time() - t0)
        built = int(time.time() - self.debug_t0)
        k = K.built(self.cfg.root) if rc == 0 else None
        if k is not None:
            res.passed(f"debug-kernel: built {k.release} in {built}s "
                       f"(background; {waited}s waited for)",
                       f"debug-kernel: built in {built}s, "
                       f"{waited}s of it waited for")
            return k
        log = self.r.log_path("debug-kernel")
        res.failed(f"debug-kernel: exit {rc} ({built}s)",
                   f"debug-kernel: exit {rc} ({built}s); last lines of {log}:")
        self.r.say("\n".join("    | " + line for line in tail(log)))
        return None

    def debian_root_start(self) -> None:
        if not (os.access(self.tool("fleet/fleet-check"), os.X_OK)
                and self.cfg.is_root):
            return
        log = self.r.log_path("debian-root")
        self.r.results.progress("debian-root: building in the background "
                                f"unless cached (log {log})")
        self.r.start_background("debian-root",
                                [self.tool("fleet/fleet-check"),
                                 "--root-only"],
                                log, nice=10)

    def deb_chroot_start(self) -> None:
        """The clean chroot deb-check builds the packages in (deb-chroot
        --prepare: debootstrap and the Build-Depends, about 5 minutes when
        debian/control changed, cached by its hash); deb_run waits for
        it (deb-chroot also serializes on its cache's lock)."""
        tool = self.tool("deb/deb-chroot")
        if not (os.access(tool, os.X_OK) and self.cfg.is_root):
            return
        log = self.r.log_path("deb-chroot-prepare")
        self.r.results.progress("deb-chroot: preparing in the background "
                                f"unless cached (log {log})")
        self.r.start_background("deb-chroot", [tool, "--prepare"], log,
                                nice=10)

    def debian_root_wait(self) -> None:
        rc = self.r.wait_background("debian-root")
        if rc not in (None, 0):
            self.r.say("refcnt-check: the Debian root's build failed "
                       f"(log {self.r.log_path('debian-root')})")

    # --- guest runs --------------------------------------------------------

    def guest_run(self, k: Kernel, topo: str, as_: str = "",
                  vm_args: Sequence[str] = (), cmd: str = "./run_tests.sh",
                  env: str = "", arch: str = "") -> None:
        """The selftests for one kernel x topology, TAP counted.  AS names
        the run in logs (e.g. memhp), VM_ARGS go to refcnt-vm, CMD is the
        guest's command, ENV its environment; ARCH arm64: the module,
        selftests and tools refcnt-cross built (build/arm64/)."""
        tag = f"{topo}-{as_}" if as_ else topo
        name = f"guest {k.release}/{tag}"
        log = self.path("logs", f"{k.release}-{tag}.log")
        top = self.path(arch) if arch else self.cfg.build
        ko = os.path.join(top, k.release, "refcnt.ko")
        tests = os.path.join(top, "selftests")
        tools = os.path.join(top, "tools")
        if not os.path.isfile(ko):
            self.r.results.failed(f"{name}: not run: no {ko} "
                                  "(module build failed)")
            return
        if not os.access(os.path.join(tests, "run_tests.sh"), os.X_OK):
            self.r.results.failed(
                f"{name}: not run: no {tests}/run_tests.sh"
                " (make selftests failed)")
            return
        timeout = self.cfg.guest_timeout * (2 if k.debug else 1)
        args = [self.tool("refcnt-vm"), "--kernel", k.arg, "--topology", topo,
                "--log", log, "--module", ko, "--file", tests + ":/refcnt"]
        if arch:
            args[1:1] = ["--arch", arch]
        if os.path.isdir(tools):
            args += ["--file", tools + ":/refcnt/tools"]
            # The dynamic ones (refcnt-exporter) need their libraries.
            args += cross.guest_libs(cross.Paths(self.cfg.build)) if arch \
                else guestlibs.dir_file_args(tools)
        if k.debug:
            # KASAN finds what slub_debug and page poisoning would.
            args.append("--no-debug")
        args += ["--timeout", str(timeout), *vm_args]
        if not self.cfg.verbose:
            args.append("--quiet")
        guest_cmd = f"{env} {cmd}" if env else cmd
        self.r.results.progress(name + (f" ({env})" if env else ""))
        t0 = time.time()
        with tempfile.TemporaryFile() as err:
            rc = subprocess.call([*args, "--", guest_cmd], cwd=self.cfg.root,
                                 stderr=err, stdin=subprocess.DEVNULL)
            err.seek(0)
            detail = err.read().decode("utf-8", "replace").rstrip("\n")
        if rc != 0 and not self.cfg.verbose:
            detail += "\nlast lines of the serial log:\n" + \
                "\n".join("| " + line for line in _serial_tail(log))
        self.r.tap_step(name, rc, t0, detail, [log])

    def hotplug_run(self, k: Kernel) -> None:
        """Memory hotplug: the 'hotplug' topology with a dimm offline at
        boot in node 1 (256M; check-long 2G on Debian's kernels) and room
        to plug one into node 2 at run time, running hotplug_test alone."""
        env = ""
        if k.debug and not self.cfg.long:
            env = f"REFCNT_HOTPLUG_MEM_CYCLES={HOTPLUG_DEBUG_CYCLES} "
        # offline_block_by_block_linear times a node of 16 blocks against
        # one of 2: a timing, so check-long's (it skips on 256M, where
        # make check has core_test's layout_change_hands_pages_over and
        # hotplug_test's counts); not under KASAN, whose time says
        # nothing of the module's and which takes
        # node_gains_memory_after_load past its timeout at 8 blocks.
        dimm = "1:2G" if self.cfg.long and not k.debug else "1:256M"
        self.guest_run(k, "hotplug", "memhp",
                       ["--dimm", dimm, "--hotplug-mem", "256M"],
                       f"echo hotplug_test >tests.list && {env}./run_tests.sh")

    def selftests(self, k: Kernel, leave_out: Sequence[str] = (),
                  only: Sequence[str] = ()) -> str:
        if only:
            return "./run_tests.sh " + " ".join(only)
        return tests_but(self.cfg.build, leave_out)

    def truth_run(self, k: Kernel) -> None:
        if not _has_target(os.path.join(self.cfg.root, "Makefile"), "truth"):
            return
        if not self.make("truth-build", "truth"):
            return
        name = f"truth {k.name}/{TRUTH_TOPOLOGIES.replace(' ', ',')}"
        log, t0, rc = self.path("logs/truth.log"), time.time(), 0
        self.r.results.progress(name)
        with open(log, "wb") as out:
            rc = subprocess.call(
                [self.tool("truth/truth-check"), "--kernel", k.arg,
                 "--topologies", TRUTH_TOPOLOGIES,
                 "--log", self.path("logs/truth-guest.log")],
                cwd=self.cfg.root, stdout=out, stderr=subprocess.STDOUT)
        # refcnt-compare's figures on hand-made pairs, and the plugin's
        # cost counter on hand-made sequences (host only).
        with open(self.path("logs/compare.log"), "wb") as out:
            rc2 = subprocess.call([self.tool("truth/compare-test")],
                                  cwd=self.cfg.root, stdout=out,
                                  stderr=subprocess.STDOUT)
        with open(self.path("logs/cost-test.log"), "wb") as out:
            rc3 = subprocess.call([self.path("truth/cost-test")],
                                  cwd=self.cfg.root, stdout=out,
                                  stderr=subprocess.STDOUT)
        self.r.tap_step(name, rc or rc2 or rc3, t0, "",
                        [log, self.path("logs/compare.log"),
                         self.path("logs/cost-test.log")])

    def trace_run(self, k: Kernel) -> None:
        if not os.access(self.tool("trace/trace-check"), os.X_OK):
            return
        if not self.truth_built():
            return
        name, log, t0 = f"trace {k.name}/four", self.path("logs/trace.log"), \
            time.time()
        self.r.results.progress(name)
        rc = _call_to(log, [self.tool("trace/trace-check"), "--guest", k.arg,
                            "--log", self.path("logs/trace-guest.log")],
                      self.cfg.root)
        self.r.tap_step(name, rc, t0, "", [log])

    def hub_run(self, k: Kernel, topos: str, papi: bool = False,
                extra: Sequence[str] = (), label: str = "") -> None:
        """The hub device's tests (tools/testing/hub-check), one boot per
        topology.  With PAPI (one topology), the PAPI component's guest
        tests first in the same boot, checked from its log after.  A
        LABEL names a run of some tests (EXTRA) in the step's name and
        its log's."""
        if not os.access(self.tool("hub-check"), os.X_OK):
            return
        if not self.truth_built():
            return
        name = f"hub {k.release}/{topos.replace(' ', ',')}"
        if label or extra:
            name += f" ({label or 'part'})"
        tag = "-" + label.replace(" ", "-") if label else ""
        log = self.path(f"logs/hub-{k.release}{tag}.log")
        # The guests' logs beside the main boot's, not over them.
        log_dir = self.path(f"logs/hub{tag}" if label else "logs")
        os.makedirs(log_dir, exist_ok=True)
        args = list(extra)
        if k.debug:
            args += ["--timeout", str(2 * self.cfg.guest_timeout),
                     "--vm-arg", "--no-debug"]
        papiw = self._papi_in_hub(k, args) if papi else None
        if papiw:
            name += " + papi"
        t0 = time.time()
        self.r.results.progress(name)
        rc = _call_to(log, [self.tool("hub-check"), "--kernel", k.arg,
                            "--topologies", topos, "--log-dir",
                            log_dir, *args], self.cfg.root)
        self.r.tap_step(name, rc, t0, "", [log])
        if papiw:
            self._papi_parse(k, papiw, topos.split()[0])

    def testpmu_run(self, k: Kernel) -> None:
        """testpmu_test in its own boot with the hub device: refcnt's PMU
        feed on the test PMU inside perf core (refcnt_testpmu.ko, built
        only against the kernels the rig builds, whose patch exports
        perf_event_overflow())."""
        name = f"testpmu {k.release}/one"
        if not os.path.isfile(self.path(k.release, "refcnt_testpmu.ko")):
            self.r.results.failed(f"{name}: not run: no refcnt_testpmu.ko "
                                  "(the rig kernel's patch?)")
            return
        if not self.truth_built():
            return
        self.guest_run(k, "one", as_="testpmu", vm_args=["--hub"],
                       cmd="./testpmu_test")

    def _papi_in_hub(self, k: Kernel, args: List[str]) -> Optional[str]:
        """papi-check --filter --guest-args: the refcnt-vm arguments (and,
        last, the guest command) that run the PAPI tests in the hub's
        boot; added to ARGS.  None if PAPI is not built."""
        work = self.path("papi-work", k.release)
        # No truth dumps of an earlier boot may stand in for this one's.
        shutil.rmtree(work, ignore_errors=True)
        if not os.access(self.path("papi/bin/papi_test"), os.X_OK):
            return None
        try:
            papicheck.check_needs(self.cfg.build, k.release)
        except Die as e:
            self.r.say(f"papi-check: error: {e}")
            return None
        lines = papicheck.guest_args(self.cfg.build, True, work)
        args += ["--pre-cmd", lines[-1]]
        for a in lines[:-1]:
            args += ["--vm-arg", a]
        return work

    def _papi_parse(self, k: Kernel, work: str, topo: str) -> None:
        t0, log = time.time(), self.path(f"logs/papi-{k.release}.log")
        rc = _call_to(log, [self.tool("papi-check"), "--kernel", k.arg,
                            "--parse", "--work", work, "--log",
                            self.path(f"logs/hub-{k.release}-{topo}.log")],
                      self.cfg.root)
        self.r.tap_step(f"papi {k.release}/{topo} (in the hub's boot)", rc,
                        t0, "", [log])

    def papi_host(self) -> None:
        """PAPI built from Debian's source with the component, and listed
        disabled where the module is not loaded (papi-check --host)."""
        if not _has_target(os.path.join(self.cfg.root, "Makefile"), "papi"):
            return
        if not self.make("papi-build", "papi"):
            return
        t0, log = time.time(), self.path("logs/papi-host.log")
        rc = _call_to(log, [self.tool("papi-check"), "--host"], self.cfg.root)
        self.r.tap_step("papi host", rc, t0, "", [log])

    def papi_run(self, k: Kernel) -> None:
        """check-long: the PAPI guest tests in a boot of their own."""
        if not os.access(self.path("papi/bin/papi_test"), os.X_OK):
            return
        if not self.truth_built("refcnt-vtruth.so"):
            return
        t0, log = time.time(), self.path(f"logs/papi-{k.release}.log")
        self.r.results.progress(f"papi {k.release}/four")
        rc = _call_to(log, [self.tool("papi-check"), "--kernel", k.arg,
                            "--log",
                            self.path(f"logs/papi-guest-{k.release}.log")],
                      self.cfg.root)
        self.r.tap_step(f"papi {k.release}/four", rc, t0, "", [log])

    def fleet_run(self, k: Kernel) -> None:
        """pmdarefcnt under a real pmcd and refcnt-exporter under promtool,
        in one boot of the Debian guest."""
        if not os.access(self.tool("fleet/fleet-check"), os.X_OK):
            return
        self.debian_root_wait()
        name = f"fleet {k.name}"
        self.r.results.progress(name)
        self.r.run_tap(name, [self.tool("fleet/fleet-check"), "--kernel",
                              k.arg, "--log",
                              self.path(f"logs/fleet-{k.name}.log"),
                              "--timeout", str(self.cfg.guest_timeout)],
                       self.path(f"logs/fleet-{k.name}.tap"),
                       skip_on_77=True)

    def deb_run(self, guest: Kernel, host: Kernel) -> None:
        """The Debian packages: make deb, lintian, the symbols file, DKMS
        on the host for HOST; check-long adds the packages installed,
        used, removed and purged in the Debian guest on GUEST."""
        if not os.access(self.tool("deb/deb-check"), os.X_OK):
            return
        self.r.wait_background("deb-chroot")
        args = ["--kernel", guest.arg, "--host-kernel", host.arg]
        if self.cfg.long:
            name = f"deb: build, host DKMS {host.name}, guest {guest.name}"
            args += ["--timeout", str(3 * self.cfg.guest_timeout)]
        else:
            name = f"deb: build, host DKMS {host.name}"
            args.append("--no-guest")
        self.r.results.progress(name)
        self.r.run_tap(name, [self.tool("deb/deb-check"), *args],
                       self.path("logs/deb.tap"), skip_on_77=True)

    def objects_run(self, k: Kernel) -> None:
        """refcnt-run's object reports: the exact stage and the HTML in
        Chromium; check-long adds bad input and redis-server."""
        if not os.access(self.tool("objects/objects-check"), os.X_OK):
            return
        stages = "exact html bad redis" if self.cfg.long else "exact html"
        if not self.truth_built():
            return
        name = f"objects {k.name}"
        self.r.results.progress(f"{name} ({stages})")
        self.r.run_tap(name, [self.tool("objects/objects-check"), "--kernel",
                              k.arg, "--stages", stages, "--log-dir",
                              self.path("logs"), "--timeout",
                              str(self.cfg.guest_timeout)],
                       self.path("logs/objects.tap"),
                       self.path("logs/objects.err"), detail_lines=5)

    def demo(self) -> None:
        """make demo as the README has it: the report names the misplaced
        array and both heatmaps and the HTML report exist."""
        self.r.step("demo", ["bash", "-c", DEMO_CHECK])

    def kcsan_run(self) -> None:
        """check-long: the KCSAN kernel built in the foreground, the module
        against it, the selftests on four."""
        if not self.built_kernel_wait("kcsan"):
            return
        k = K.built(self.cfg.root, "kcsan")
        if k is None or not self.module(k):
            return
        # KCSAN reports the whole kernel's races and panics on one under
        # panic_on_warn: off here, so that the run goes on and the log
        # scan fails it for the reports that name refcnt only (rig.klog;
        # a WARNING still fails it).
        self.guest_run(k, "four", cmd="./run_tests.sh", env=DEBUG_VARIANTS,
                       vm_args=["--append", "panic_on_warn=0"])

    def built_kernel_wait(self, variant: str) -> bool:
        """The background build's end (one step), or, without it (--only,
        or cached), the build in the foreground."""
        name = f"debug-kernel-{variant}"
        cmd = [self.tool("refcnt-debug-kernel"), "--variant", variant,
               "build"]
        if name not in self.r.background:
            return self.r.step(name, cmd)
        t0 = time.time()
        self.r.results.progress(f"{name}: waiting for the build")
        rc = self.r.wait_background(name)
        built = int(time.time() - self.debug_t0)
        if rc == 0:
            self.r.results.passed(
                f"{name}: built (background; {built}s after "
                f"the start, {seconds(t0)} waited for)")
            return True
        log = self.r.log_path(name)
        self.r.results.failed(f"{name}: exit {rc}",
                              f"{name}: exit {rc}; last lines of {log}:")
        self.r.say("\n".join("    | " + line for line in tail(log)))
        return False

    def testpmu_second_run(self) -> None:
        """testpmu_test on perf core at 6.12: the pmu-6.12 kernel (built
        in the background), the modules against it, its own boot."""
        if not self.built_kernel_wait("pmu-6.12"):
            return
        k = K.built(self.cfg.root, "pmu-6.12")
        if k is None or not self.module(k):
            return
        self.testpmu_run(k)

    def arm64_run(self, release: str) -> None:
        """check-long: an aarch64 guest of Debian's arm64 RELEASE (QEMU's
        virt machine under TCG), two nodes with CPUs and a CPU-less
        memory node as on Grace, refcnt.ko cross-built and loaded with
        its default feed (faults), the cross-built selftests."""
        try:
            cmd = tests_but(self.path("arm64"), ARM64_LEAVES_OUT)
        except OSError:
            cmd = "./run_tests.sh"  # guest_run reports it missing
        self.guest_run(K.debian(release), ARM64_TOPOLOGY, cmd=cmd,
                       env=SHORT_VARIANTS, arch="arm64")

    def module(self, k: Kernel) -> bool:
        args = ["module", f"KVER={k.release}"]
        if k.kdir:
            args.insert(1, f"KDIR={k.kdir}")
        return self.make(f"module-{k.release}", *args)


def _call_to(log: str, cmd: Sequence[str], cwd: str) -> int:
    with open(log, "wb") as out:
        return subprocess.call(cmd, cwd=cwd, stdout=out,
                               stderr=subprocess.STDOUT,
                               stdin=subprocess.DEVNULL)


def _serial_tail(log: str) -> List[str]:
    """The end of a guest's serial log, before the dmesg refcnt-vm adds."""
    lines = tail(log, 10**9)
    marker = "===== refcnt-vm: guest dmesg ====="
    if marker in lines:
        lines = lines[:lines.index(marker)]
    return lines[-40:]


def host_steps(c: Check) -> List[Step]:
    """Builds and host checks, in the order they run."""
    cfg, steps = c.cfg, []

    def make(name: str, *args: str, est: int = 30) -> Step:
        return Step(name, estimate=est, action=lambda: c.make(name, *args))

    for k in cfg.debian:
        kern = c.kernels[k]
        steps.append(Step(f"module-{k}", estimate=55,
                          action=partial(c.module, kern)))
    # The -m32 builds of the ABI tests (compat_ioctl) are required: where
    # gcc -m32 fails they would only be listed as skipped.
    steps += [make("selftests", "selftests", "REQUIRE_M32=1", est=57),
              make("tools", "tools", est=40)]
    if _has_target(os.path.join(cfg.root, "Makefile"), "pmda"):
        steps.append(make("pmda", "pmda", est=1))
        steps.append(Step("fleet-host", estimate=2, action=lambda: c.r.step(
            "fleet-host", [c.tool("refcnt-fleet-check"), cfg.build])))
    steps += [
        # librefcnt-track.so natively: a large calloc() recorded.
        make("track-check", "track-check", est=1),
        make("json-check", "json-check", est=1),
        # The 95% intervals of sampled counts: Garwood's bounds.
        make("interval-check", "interval-check", est=1),
        make("lib-check", "-C", "lib", "check", f"O={c.path('lib')}",
             "WERROR=1", est=6),
        Step("papi-host", estimate=120, action=c.papi_host),
        # The rig itself, before anything boots: its unit tests, mypy
        # --strict and flake8.
        make("rig-check", "rig-check", est=3),
    ]
    # Checks no guest needs, each in a directory of its own or reading
    # only: beside the guests once the debug kernel is built (they need
    # the harness and checkpatch that make selftests extracted).
    side = [
        # The core of kmod/ natively: unit tests, the conservation stress
        # under TSan and ASan+UBSan, a bounded fuzz run.
        make("core-check", "-C", "tools/testing/core", "check",
             f"O={c.path('core')}", est=48),
        # The PEBS/IBS attributes against the kernels' rules (a second).
        make("pmu-check", "-C", "tools/testing/pmu", "check",
             f"O={c.path('pmu')}", est=1),
        make("checkpatch", "checkpatch", est=18),
        make("kernel-doc", "kernel-doc", est=1),
        make("shellcheck", "shellcheck", est=16),
        # refcnt.ko for Debian's arm64 kernels, librefcnt and the tools,
        # cross-built (the headers and libraries fetched once, build/arm64/).
        make("cross-arm64", "cross-arm64", est=80),
    ]
    for s in side:
        s.needs, s.lane = ("selftests",), "side"
    return steps + side


def debian_guest_steps(c: Check, k: Kernel) -> List[Step]:
    """The selftests' boots on a Debian kernel, and its hotplug boot."""
    cfg = c.cfg
    need = (f"module-{k.name}", "selftests", "tools")

    def boot(topo: str, est: int, leave_out: Sequence[str] = (),
             only: Sequence[str] = (), env: str = "") -> Step:
        return Step(f"guest {k.release}/{topo}", need, est,
                    action=lambda: c.guest_run(
                        k, topo, cmd=c.selftests(k, leave_out, only),
                        env=env))

    full = cfg.long and not cfg.topologies
    if cfg.topologies:
        steps = [Step(f"guest {k.release}/{t}", need, 300,
                      action=partial(c.guest_run, k, t))
                 for t in cfg.topologies]
    elif full:
        steps = [Step(f"guest {k.release}/{t}", need, est,
                      action=partial(c.guest_run, k, t))
                 for t, est in (("one", 400), ("four", 900), ("72", 1200))]
    elif k.name == cfg.first:
        steps = [boot("one", 196, leave_out=ONE_LEAVES_OUT),
                 boot("four", 315, leave_out=["hotplug_test"],
                      env=SHORT_VARIANTS),
                 boot("72", 391, only=TESTS_72, env=SHORT_VARIANTS)]
    else:
        steps = [boot("four", 205, leave_out=["hotplug_test"],
                      env=SHORT_VARIANTS)]
    steps.append(Step(f"guest {k.release}/hotplug-memhp", need, 58,
                      action=lambda: c.hotplug_run(k)))
    return steps


def debug_steps(c: Check) -> List[Step]:
    """The debug kernel, once built: the module against it, the selftests
    on four, hotplug_test in its own boot, testpmu_test with the hub (the
    test PMU exists in this kernel only), then the hub tests but the exact
    windows (check-long: all of them)."""
    state: Dict[str, Optional[Kernel]] = {}

    def wait() -> None:
        k = c.debug_kernel_wait()
        state["k"] = k if k is not None and c.module(k) else None

    def then(f: Callable[[Kernel], object]) -> Callable[[], object]:
        def run() -> object:
            # Without the wait step (--only): the kernel an earlier run
            # built, and the module built against it then.
            k = state["k"] if "k" in state else K.built(c.cfg.root)
            return None if k is None else f(k)
        return run

    need = ("debug-kernel",)
    steps = [
        Step("debug-kernel", ("debug-kernel-build", "selftests", "tools"), 39,
             action=wait),
        Step("guest debug/four", need, 421, action=then(
            lambda k: c.guest_run(k, "four",
                                  cmd=c.selftests(k, ["hotplug_test"]),
                                  env=DEBUG_LONG_VARIANTS if c.cfg.long
                                  else DEBUG_VARIANTS))),
        Step("guest debug/hotplug-memhp", need, 315,
             action=then(c.hotplug_run)),
        Step("testpmu debug", need, 150, action=then(c.testpmu_run)),
        Step("hub debug/four (part)", need, 330, action=then(
            lambda k: c.hub_run(k, "four", extra=[
                "--tests", HUB_DEBUG_TESTS, "--reloads", "3"]))),
    ]
    if c.cfg.long:
        # The exact windows' records must fit a ring: under KASAN the
        # kernel's own references add up to 90Ki more than the default
        # 128Ki (check-long, 2026-11-29), so rings four times as large.
        # refcntd_pmu_test in a boot of its own with the default rings,
        # whose flood its timing is for.
        steps += [
            Step("hub debug/four", need, 900, action=then(
                lambda k: c.hub_run(k, "four", extra=[
                    "--tests", HUB_EXACT_TESTS, "--vm-arg", "--hub-records",
                    "--vm-arg", str(HUB_DEBUG_RECORDS)],
                    label="exact windows"))),
            Step("hub debug/four refcntd", need, 200, action=then(
                lambda k: c.hub_run(k, "four", extra=[
                    "--tests", "refcntd_pmu"], label="refcntd")))]
    return steps


def plan(c: Check) -> List[Step]:
    """Every step of the run, in the order it runs (see --help)."""
    cfg = c.cfg
    # The two long builds start first and take what the rest leaves idle.
    steps = [Step("debian-root-build", estimate=120, background=True,
                  action=c.debian_root_start),
             Step("deb-chroot-build", estimate=280, background=True,
                  action=c.deb_chroot_start)]
    if cfg.debug:
        steps.insert(0, Step("debug-kernel-build", estimate=2391,
                             background=True, action=c.debug_kernel_start))
    steps += host_steps(c)
    ks = [c.kernels[k] for k in cfg.debian]
    for k in ks:
        steps += debian_guest_steps(c, k)
    if ks:
        steps += first_kernel_steps(c, ks[0], ks[1] if len(ks) > 1 else ks[0])
    if cfg.debug:
        steps += debug_steps(c)
        # The test PMU on perf core at 6.12: its kernel builds after the
        # debug kernel, beside the guests.
        steps.insert(1, Step("pmu-kernel-build", ("debug-kernel-build",),
                             estimate=900, background=True,
                             action=partial(c.built_kernel_start,
                                            "pmu-6.12")))
        steps.append(Step("testpmu pmu-6.12",
                          ("pmu-kernel-build", "selftests", "tools"), 200,
                          action=c.testpmu_second_run))
    if cfg.long:
        # The KCSAN kernel's build, queued behind the debug kernel's.
        steps.insert(1 if cfg.debug else 0,
                     Step("kcsan-kernel-build",
                          ("debug-kernel-build",) if cfg.debug else (),
                          estimate=1200, background=True,
                          action=partial(c.built_kernel_start, "kcsan")))
        steps.append(Step("kcsan", ("kcsan-kernel-build",), 1200,
                          action=c.kcsan_run))
        steps += arm64_steps(c)
    return steps


def arm64_steps(c: Check) -> List[Step]:
    """check-long: the arm64 guest's pieces (after make cross-arm64), and
    its selftests on each Debian release's arm64 kernel."""
    # 75 s cold (153 MB fetched), 4 s warm; a boot 213 s on 6.1, 188 s
    # on 6.12 (on the 2-CPU machine beside other work).
    build = Step("cross-arm64-guest", ("cross-arm64",), 75,
                 action=lambda: c.r.step("cross-arm64-guest", [
                     c.tool("refcnt-cross"), "arm64-guest"]))
    steps = [build]
    for i, k in enumerate(k for k in c.cfg.debian if k.endswith("-amd64")):
        rel = k.removesuffix("-amd64") + "-arm64"
        steps.append(Step(f"guest {rel}/{ARM64_TOPOLOGY}",
                          ("cross-arm64-guest",), 215 if i == 0 else 190,
                          action=partial(c.arm64_run, rel)))
    return steps


def first_kernel_steps(c: Check, first: Kernel, second: Kernel) -> List[Step]:
    """The truth, trace, hub, PAPI, fleet, objects, demo and package steps:
    most on the first Debian kernel, the fleet on the second (make check;
    check-long runs the hub, PAPI and fleet steps on both)."""
    cfg = c.cfg
    ks = [c.kernels[k] for k in cfg.debian]
    steps = [Step(f"truth {first.name}", ("tools",), 69,
                  action=partial(c.truth_run, first)),
             Step(f"trace {first.name}", ("tools",), 55,
                  action=partial(c.trace_run, first))]
    for k in ks:
        need = (f"module-{k.name}", "selftests")
        if k is first:
            topos = "four 72" if cfg.long else "four"
            steps.append(Step(f"hub {k.release}", need, 154, action=partial(
                c.hub_run, k, topos, not cfg.long)))
            # refcntd on the hub feed at placement's period: its events
            # name their pages (the hub boot's device runs at period 1).
            steps.append(Step(f"hub {k.release} period 64", need, 60,
                              action=partial(
                                  c.hub_run, k, "four", extra=[
                                      "--tests", "refcntd_pmu", "--vm-arg",
                                      "--hub=64"], label="period 64")))
        elif cfg.long:
            steps.append(Step(f"hub {k.release}", need, 300,
                              action=partial(c.hub_run, k, "four")))
        if cfg.long:
            steps.append(Step(f"papi {k.release}", need, 300,
                              action=partial(c.papi_run, k)))
    # The agents run in user space: one kernel in make check, the second
    # (newer) one.
    for k in ks:
        if cfg.long or k is second:
            steps.append(Step(f"fleet {k.name}",
                              ("debian-root-build", "pmda", "tools"), 222,
                              action=partial(c.fleet_run, k)))
    steps += [Step(f"objects {first.name}", ("tools",), 112,
                   action=partial(c.objects_run, first)),
              Step("demo", (f"module-{first.name}", "tools"), 172,
                   action=c.demo),
              # make deb builds in a copy of the tree: beside the guests.
              Step("deb", ("deb-chroot-build",), 280, lane="side",
                   action=partial(c.deb_run, first, second))]
    return steps
