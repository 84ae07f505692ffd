# SPDX-License-Identifier: GPL-2.0
"""The debug kernels: Debian's linux-source-6.1 (or -6.12) configured
from allnoconfig with what the rig's guests use (tools/testing/
debug-kernel/guest.config) and a variant's own options (debug: lockdep,
KASAN, kmemleak, debug objects; kcsan; pmu-6.12: 6.12 for the test PMU,
no checkers), with the rig's patches (tools/testing/debug-kernel/
patches/*.patch, in name order: what the rig's test modules need of the
kernel, as the exports of the test PMU), built and cached in
build/debug-kernel/ by a key of the configuration, the patches, the
source package's version, the compiler and this recipe: an unchanged key
is never built twice.  See
Documentation/testing.rst, "The debug kernel"."""
from __future__ import annotations

import fcntl
import glob
import hashlib
import os
import shutil
import subprocess
import sys
import time
from typing import List, Optional

PROG = "refcnt-debug-kernel"
# Bump when the way the tree is built changes (not the configuration: it
# is part of the key by itself).
RECIPE = 3
# A variant: the source package's series and its own configuration file
# (tools/testing/debug-kernel/NAME.config, after guest.config).
VARIANTS = {
    "debug": ("6.1", "debug"),
    "kcsan": ("6.1", "kcsan"),
    # The test PMU's 6.12 kernel: perf core at the second release make
    # check tests, without the checkers (they would double its build).
    "pmu-6.12": ("6.12", "pmu"),
}


class BuildError(Exception):
    pass


def say(msg: str) -> None:
    print(f"{PROG}: {msg}", file=sys.stderr, flush=True)


class DebugKernel:
    def __init__(self, root: str, variant: str = "debug",
                 jobs: Optional[int] = None) -> None:
        if variant not in VARIANTS:
            raise BuildError(f"no variant {variant} (tools/testing/"
                             f"debug-kernel: {', '.join(VARIANTS)})")
        self.series, self.config_name = VARIANTS[variant]
        build = os.environ.get("REFCNT_BUILD_DIR",
                               os.path.join(root, "build"))
        self.cache = os.path.join(build, "debug-kernel")
        self.configs = os.path.join(root, "tools/testing/debug-kernel")
        self.package = f"linux-source-{self.series}"
        default = f"/usr/src/{self.package}.tar.xz"
        # LINUX_SOURCE: another 6.1 tarball (the 6.12 one is fixed).
        self.source = (os.environ.get("LINUX_SOURCE", default)
                       if self.series == "6.1" else default)
        self.variant = variant
        self.jobs = jobs or os.cpu_count() or 1

    def config_text(self) -> str:
        text = ""
        for name in ("guest", self.config_name):
            with open(os.path.join(self.configs, name + ".config")) as f:
                text += f.read()
        return text

    def patches(self) -> List[str]:
        """The rig's patches to the source, in the order they apply."""
        return sorted(glob.glob(os.path.join(self.configs, "patches",
                                             "*.patch")))

    def patch_text(self) -> str:
        text = ""
        for p in self.patches():
            with open(p) as f:
                text += f"patch {os.path.basename(p)}\n{f.read()}"
        return text

    def source_version(self) -> str:
        """The source package's version names the tarball's contents; a
        tarball not from a package is named by its size and time."""
        r = subprocess.run(["dpkg-query", "-W", "-f=${Version}",
                            self.package], capture_output=True,
                           text=True)
        if r.returncode == 0 and r.stdout:
            return r.stdout
        st = os.stat(self.source)
        return f"file-{st.st_size}-{int(st.st_mtime)}"

    def key(self) -> str:
        gcc = subprocess.run(["gcc", "--version"], capture_output=True,
                             text=True).stdout.split("\n")[0]
        text = (f"recipe {RECIPE}\nsource {self.source_version()}\n{gcc}\n"
                + self.config_text() + self.patch_text())
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    def dir(self, key: Optional[str] = None) -> str:
        return os.path.join(self.cache,
                            f"{self.variant}-{key or self.key()}")

    def built_dir(self) -> Optional[str]:
        obj = os.path.join(self.dir(), "obj")
        return obj if os.path.isfile(os.path.join(obj, ".built")) else None

    def build(self) -> str:
        """Build unless cached; the build directory (KDIR)."""
        k = self.key()
        obj = os.path.join(self.dir(k), "obj")
        if os.path.isfile(os.path.join(obj, ".built")):
            return obj
        self._check_tools()
        os.makedirs(self.cache, exist_ok=True)
        # One build at a time: make check's background build and a user's.
        with open(os.path.join(self.cache, ".lock"), "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if not os.path.isfile(os.path.join(obj, ".built")):
                self._build(self.dir(k))
        return obj

    def _check_tools(self) -> None:
        if not os.access(self.source, os.R_OK):
            raise BuildError(f"no {self.source} (install {self.package}: "
                             "tools/testing/refcnt-setup deps)")
        for t in ("flex", "bison", "bc"):
            if shutil.which(t) is None:
                raise BuildError(f"no {t} (tools/testing/refcnt-setup deps "
                                 "installs it)")
        if not os.path.isfile("/usr/include/gelf.h"):
            raise BuildError("no libelf headers (install libelf-dev: "
                             "tools/testing/refcnt-setup deps)")

    def _build(self, d: str) -> None:
        for old in glob.glob(os.path.join(self.cache, self.variant + "-*")):
            if old != d:
                say(f"removing the old build {old}")
                shutil.rmtree(old, ignore_errors=True)
        t0 = time.time()
        src, obj = os.path.join(d, "src"), os.path.join(d, "obj")
        shutil.rmtree(d, ignore_errors=True)
        os.makedirs(src)
        os.makedirs(obj)
        self._extract(src)
        self._patch(src)
        self._configure(d, src, obj)
        say(f"building with {self.jobs} jobs under nice 19")
        # bzImage to boot; modules for Module.symvers (external modules).
        _run(["nice", "-n", "19", "make", "-C", src, f"O={obj}", "-j",
              str(self.jobs), "bzImage", "modules"],
             "the kernel build failed (see above)")
        os.symlink("arch/x86/boot/bzImage", os.path.join(obj, "bzImage"))
        # What an external module build does not read: the objects.
        for dirpath, _, names in os.walk(obj):
            for name in names:
                if name.endswith(".o"):
                    os.unlink(os.path.join(dirpath, name))
        secs = int(time.time() - t0)
        with open(os.path.join(obj, ".build-seconds"), "w") as f:
            f.write(f"{secs}\n")
        open(os.path.join(obj, ".built"), "w").close()
        say(f"built {release(obj)} in {secs} s: {obj}")

    def _extract(self, src: str) -> None:
        name = os.path.basename(self.source)
        say(f"extracting {name} into {src}")
        # Not the documentation (but its Kconfig) nor other architectures'
        # device trees: a third of the tree, never read.
        top = self.package
        _run(["tar", "-xJf", self.source, "-C", src, "--strip-components=1",
              f"--exclude={top}/Documentation/[!K]*",
              f"--exclude={top}/arch/*/boot/dts"],
             f"cannot extract {self.source}")

    def _patch(self, src: str) -> None:
        for p in self.patches():
            say(f"applying {os.path.basename(p)}")
            _run(["patch", "-p1", "-s", "-N", "-d", src, "-i", p],
                 f"{os.path.basename(p)} does not apply to {self.source}")

    def _configure(self, d: str, src: str, obj: str) -> None:
        say(f"configuring: allnoconfig + guest.config + "
            f"{self.config_name}.config")
        allconfig = os.path.join(d, "allconfig")
        with open(allconfig, "w") as f:
            f.write(self.config_text())
        _run(["make", "-s", "-C", src, f"O={obj}",
              f"KCONFIG_ALLCONFIG={allconfig}", "allnoconfig"],
             "make allnoconfig failed")
        with open(os.path.join(obj, ".config")) as f:
            bad = unmet(self.config_text(), f.read())
        if bad:
            raise BuildError(
                f"options of guest.config or {self.config_name}.config that did "
                f"not hold (a dependency is missing?): {' '.join(bad)}")


def unmet(wanted: str, dotconfig: str) -> List[str]:
    """The lines of WANTED that do not hold in DOTCONFIG: an option whose
    dependencies are missing is dropped silently by Kconfig."""
    have = set(dotconfig.split("\n"))
    set_syms = {ln.split("=", 1)[0] for ln in have if ln.startswith("CONFIG_")}
    bad = []
    for ln in wanted.split("\n"):
        if ln.startswith("CONFIG_") and "=" in ln and ln not in have:
            bad.append(ln)
        elif ln.startswith("# CONFIG_") and ln.endswith(" is not set"):
            if ln[2:].split()[0] in set_syms:
                bad.append(ln)
    return bad


def release(obj: str) -> str:
    with open(os.path.join(obj, "include/config/kernel.release")) as f:
        return f.read().strip()


def _run(cmd: List[str], err: str) -> None:
    # The compiler's output goes to stderr: stdout is the directory.
    if subprocess.call(cmd, stdout=sys.stderr) != 0:
        raise BuildError(err)
