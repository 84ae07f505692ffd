# SPDX-License-Identifier: GPL-2.0
#
# refcnt top-level Makefile.
#
#   make check            build everything, run the selftests in QEMU NUMA
#                         guests on every supported kernel (what CI runs)
#   make demo             boot a 4-node guest and show what refcnt sees
#                         (TRUTH=1: and beside it what the demo really did;
#                         counts from the hub device; HUB=0: the fault feed)
#   make module KVER=v    build kmod/ for kernel release v (W=1, sparse C=2;
#                         any warning fails) into build/v/refcnt.ko, and the
#                         test rig's modules (tools/testing/kmod/, never
#                         installed) into build/v/refcnt_test.ko and
#                         build/v/refcnt_hub.ko
#   make module KDIR=d    the same against a kernel build directory d
#   make lib              librefcnt (static, shared, refcnt.pc) into build/lib/,
#                         the one build tools, selftests and install use
#   make selftests        static test binaries into build/selftests/
#   make tools            command-line tools into build/tools/
#   make pmda             pmdarefcnt, the PCP agent, into build/pmda/
#   make checkpatch       checkpatch.pl --strict over kmod/, uapi/ and the
#                         test rig's modules (tools/testing/kmod/)
#   make bench            reference-path benchmark: natively (the core of
#                         kmod/ in user space), then in a 4-node guest, then
#                         the hub device (tools/testing/hub-bench)
#   make core-check       the core of kmod/ in user space: unit tests, the
#                         stress under TSan and ASan+UBSan, a short fuzz run
#   make pmu-check        the PEBS/IBS feed's perf attributes, built by
#                         kmod/pmu*.c in user space, against the rules of
#                         6.1, 6.12 and the newest kernel read
#   make fuzz             fuzz the core against a model of refcnt(5)'s
#                         counters (FUZZ_OPS operations, default 10 million)
#   make truth            the QEMU plugin that counts every guest reference
#                         (refcnt-vm --truth) and its guest programs
#   make accuracy         how close each feed's counts are to the truth
#   make accuracy-long    its long rows: >= 2x10^9 guest instructions a run,
#                         PEBS and IBS at a period costing <= 1%
#   make papi             PAPI (Debian's source) with the refcnt component,
#                         its utilities, examples/papi and the component's
#                         tests, static, into build/papi/bin
#   make deb              the Debian packages (debian/) into build/deb/
#   make deb-check        build them, lintian, and install them in a Debian
#                         guest (tools/testing/deb/deb-check)
#   make cross-arm64      refcnt.ko for Debian's arm64 kernels (W=1, sparse),
#                         librefcnt and the tools, cross-built into
#                         build/arm64/ (tools/testing/refcnt-cross)
#   make cross-arm64-guest  the same, with the arm64 guest's kernels,
#                         busybox and selftests (refcnt-vm --arch arm64)
#
# The kselftest harness and checkpatch.pl come from Debian's linux-source-6.1
# package; they are extracted into build/, never copied into the tree.

SHELL := /bin/bash
TOP := $(CURDIR)
# V=1 prints every compile and link command in full (a package build
# passes it: Debian Policy 4.9); the default prints one line for each.
V ?= 0
Q := $(if $(filter 1,$(V)),,@)
BUILD := $(TOP)/build
KVER ?= $(shell uname -r)
KDIR ?= /usr/src/linux-headers-$(KVER)
LINUX_SOURCE ?= /usr/src/linux-source-6.1.tar.xz
KSFT_DIR := $(BUILD)/linux-source/tools/testing/selftests
CHECKPATCH := $(BUILD)/linux-source/scripts/checkpatch.pl
KERNEL_DOC := $(BUILD)/linux-source/scripts/kernel-doc
GET_ABI := $(BUILD)/linux-source/scripts/get_abi.pl
# The few files we use from the kernel source tarball; the stamp is named
# after the list, so that a longer list extracts again.
LINUX_SOURCE_FILES := tools/testing/selftests/kselftest_harness.h \
	tools/testing/selftests/kselftest.h scripts/checkpatch.pl \
	scripts/spelling.txt scripts/const_structs.checkpatch scripts/kernel-doc \
	scripts/get_abi.pl
LINUX_SOURCE_STAMP := $(BUILD)/linux-source/.stamp-$(word 1,$(shell echo $(LINUX_SOURCE_FILES) | cksum))

KMOD_SRCS := $(wildcard kmod/*.c kmod/*.h) kmod/Kbuild
# The test rig's modules: test hooks and the hub device's driver.
TESTMOD_DIR := tools/testing/kmod
TESTMOD_SRCS := $(wildcard $(TESTMOD_DIR)/*.c $(TESTMOD_DIR)/*.h) $(TESTMOD_DIR)/Kbuild
TESTMOD_UAPI := $(wildcard $(TESTMOD_DIR)/uapi/linux/*.h)
MODULE_OUT := $(BUILD)/$(KVER)

.PHONY: all lib module selftests tools checkpatch check demo bench install dkms-check \
	shellcheck kernel-doc check-long \
	intree-check clean FORCE core-check fuzz pmu-check
.PHONY: truth accuracy accuracy-long papi linux-source

all: lib selftests tools

# librefcnt, built once: lib/Makefile decides what is out of date. PREFIX
# only goes into refcnt.pc. CFLAGS, LDFLAGS and WERROR=1 pass through.
PREFIX ?= /usr/local
LIB_OUT := $(BUILD)/lib
LIB_MAKE = $(MAKE) --no-print-directory -C lib O=$(LIB_OUT) UAPI_DIR=$(TOP)/uapi \
	PREFIX=$(PREFIX)
lib: $(LIB_OUT)/librefcnt.a

$(LIB_OUT)/librefcnt.a: FORCE
	@+$(LIB_MAKE) all

# Command-line tools. TOOLS_BIN go to $(PREFIX)/bin; demo-workload is an
# example, installed out of the PATH (see install).
TOOLS_BIN := refcnt-info refcnt-run refcnt-top refcnt-dump refcnt-compare
TOOLS := $(TOOLS_BIN) demo-workload
# WERROR=0 (a package build, make deb) keeps a newer compiler's new warning
# from failing the build; the project's own builds keep -Werror.
WERROR ?= 1
TOOLS_CFLAGS := -O2 -g -Wall -Wextra $(if $(filter 1,$(WERROR)),-Werror) \
	-D_GNU_SOURCE -I$(TOP)/uapi -I$(TOP)/lib/include -I$(TOP)/tools/src
# The user's (or dpkg-buildflags') CPPFLAGS, CFLAGS and LDFLAGS come after
# ours, in every compile and link of the tools and the PMDA.
TOOLS_USER_FLAGS = $(CPPFLAGS) $(CFLAGS) $(LDFLAGS)
# TOOLS_LINK=static (the default): linked with librefcnt.a and libnuma, all
# static, so they run in the test guests as they are. TOOLS_LINK=shared:
# with librefcnt.so and the system's shared libraries, as a distribution
# package wants them (make deb); they then need librefcnt.so.1 installed.
# The tools that draw heatmaps (TOOLS_HEATMAP) also link heatmap.c, libpng
# and zlib.
TOOLS_LINK ?= static
TOOLS_LIBREFCNT := $(BUILD)/lib/librefcnt.a
# jansson (libjansson-dev) writes the --json output's strings
# (tools/src/rjson.c); its libjansson.a links statically.
JSON_LIBS := -ljansson
# elfutils (refcnt-run): libdw.so brings its own dependencies; libdw.a
# needs zlib, liblzma, libbz2 and libzstd named.
ifeq ($(TOOLS_LINK),shared)
TOOLS_STATIC :=
TOOLS_LIBS := -L$(BUILD)/lib -lrefcnt -lnuma $(JSON_LIBS)
PMDA_LIBS := -L$(BUILD)/lib -lrefcnt -lnuma $(JSON_LIBS)
DW_LIBS := -ldw -lelf
else ifeq ($(TOOLS_LINK),static)
TOOLS_STATIC := -static
TOOLS_LIBS := $(TOOLS_LIBREFCNT) -lnuma $(JSON_LIBS)
PMDA_LIBS := $(TOOLS_LIBREFCNT) -Wl,-Bstatic -lnuma $(JSON_LIBS) -Wl,-Bdynamic
DW_LIBS := -ldw -lelf -lz -llzma -lbz2 -lzstd
else
$(error TOOLS_LINK must be static or shared, not '$(TOOLS_LINK)')
endif
TOOLS_COMMON := tools/src/rtools.c tools/src/rtools.h tools/src/rjson.c tools/src/rjson.h \
	tools/src/rinterval.c tools/src/rinterval.h \
	uapi/linux/refcnt.h
TOOLS_HEATMAP := refcnt-run refcnt-dump
tools: $(addprefix $(BUILD)/tools/,$(TOOLS))

$(addprefix $(BUILD)/tools/,$(TOOLS_HEATMAP)): tools/src/heatmap.c tools/src/heatmap.h
# refcnt-run's parts.
$(BUILD)/tools/refcnt-run: $(wildcard tools/src/run/*.c tools/src/run/*.h) \
	tools/src/trace/policy.c tools/src/trace/policy.h

$(BUILD)/tools/%: tools/src/%.c $(TOOLS_COMMON) $(TOOLS_LIBREFCNT)
	@mkdir -p $(dir $@)
	@echo "  CC      $@"
	$(Q)$(CC) $(TOOLS_CFLAGS) $(TOOLS_USER_FLAGS) $(TOOLS_STATIC) -o $@ $(filter %.c,$^) \
		$(TOOLS_LIBS) $(if $(filter %/heatmap.c,$^),-lpng -lz) -lm

$(BUILD)/tools/demo-workload: examples/demo-workload.c
	@mkdir -p $(dir $@)
	@echo "  CC      $@"
	$(Q)$(CC) $(TOOLS_CFLAGS) $(TOOLS_USER_FLAGS) -pthread $(TOOLS_STATIC) -o $@ $< -lnuma

# The demo again, linked dynamically: refcnt-run can preload its allocation
# tracker into this one, and names its arrays after the functions that
# allocate them (make demo; what make install puts in $(PREFIX)/lib/refcnt).
# The static one above runs in the selftests' guests, which have no libc.
tools: $(BUILD)/demo/demo-workload
$(BUILD)/demo/demo-workload: examples/demo-workload.c
	@mkdir -p $(dir $@)
	@echo "  CC      $@"
	$(Q)$(CC) $(TOOLS_CFLAGS) $(TOOLS_USER_FLAGS) -pthread -o $@ $< -lnuma

$(LINUX_SOURCE_STAMP): $(LINUX_SOURCE)
	@echo "  EXTRACT kselftest harness, checkpatch and kernel-doc from $(notdir $<)"
	@mkdir -p $(BUILD)/linux-source
	@tar -xJf $< -C $(BUILD)/linux-source --strip-components=1 \
		$(addprefix linux-source-6.1/,$(LINUX_SOURCE_FILES))
	@touch $@

# The extracted files, for the sub-makes (core, pmu) that need the harness.
linux-source: $(LINUX_SOURCE_STAMP)

# Each kernel gets its own copy of the sources: kbuild builds in place.
# The rig's modules build after refcnt.ko, against its Module.symvers.
KBUILD_CHECKED = W=1 C=2 CHECK="sparse -Wno-unknown-attribute"
module: $(KMOD_SRCS) uapi/linux/refcnt.h $(TESTMOD_SRCS) $(TESTMOD_UAPI)
	@test -d $(KDIR) || { echo "no kernel build directory $(KDIR): install linux-headers-$(KVER) (tools/testing/refcnt-setup deps)" >&2; exit 1; }
	@rm -rf $(MODULE_OUT)/kmod $(MODULE_OUT)/uapi $(MODULE_OUT)/testing
	@mkdir -p $(MODULE_OUT)/kmod $(MODULE_OUT)/uapi/linux $(MODULE_OUT)/testing/uapi/linux
	@cp $(KMOD_SRCS) $(MODULE_OUT)/kmod/
	@cp uapi/linux/refcnt.h $(MODULE_OUT)/uapi/linux/
	@cp $(TESTMOD_SRCS) $(MODULE_OUT)/testing/
	@cp $(TESTMOD_UAPI) $(MODULE_OUT)/testing/uapi/linux/
	@set -o pipefail; { $(MAKE) -C $(KDIR) M=$(MODULE_OUT)/kmod CONFIG_REFCNT=m \
		$(KBUILD_CHECKED) modules && \
		$(MAKE) -C $(KDIR) M=$(MODULE_OUT)/testing $(KBUILD_CHECKED) \
		KBUILD_EXTRA_SYMBOLS=$(MODULE_OUT)/kmod/Module.symvers modules; } \
		2>&1 | tee $(MODULE_OUT)/build.log
	@if grep -E '(warning|error):' $(MODULE_OUT)/build.log >/dev/null; then \
		echo "module build for $(KVER) has warnings (W=1 or sparse): see $(MODULE_OUT)/build.log" >&2; exit 1; fi
	@cp $(MODULE_OUT)/kmod/refcnt.ko $(MODULE_OUT)/testing/*.ko $(MODULE_OUT)/
	@echo "  MODULE  $(MODULE_OUT)/refcnt.ko"
	@for m in $(MODULE_OUT)/testing/*.ko; do \
		echo "  MODULE  $(MODULE_OUT)/$${m##*/} (test rig)"; done

selftests: $(LINUX_SOURCE_STAMP) $(LIB_OUT)/librefcnt.a
	@$(MAKE) -C selftests/refcnt O=$(BUILD)/selftests KSFT_DIR=$(KSFT_DIR) \
		UAPI_DIR=$(TOP)/uapi LIBREFCNT=$(LIB_OUT)/librefcnt.a \
		REQUIRE_M32=$(REQUIRE_M32)

# kmod/compat.h is the one place allowed to test kernel versions; BIT()
# does not exist for uapi headers.
CHECKPATCH_FLAGS := --strict --no-tree --terse --show-types
checkpatch: $(LINUX_SOURCE_STAMP)
	@perl $(CHECKPATCH) $(CHECKPATCH_FLAGS) \
		-f $(filter-out kmod/compat.h,$(wildcard kmod/*.c kmod/*.h)) \
		kmod/Kbuild kmod/Kconfig
	@perl $(CHECKPATCH) $(CHECKPATCH_FLAGS) --ignore BIT_MACRO \
		-f uapi/linux/refcnt.h $(TESTMOD_UAPI)
	@perl $(CHECKPATCH) $(CHECKPATCH_FLAGS) \
		--ignore LINUX_VERSION_CODE,CONSTANT_COMPARISON -f kmod/compat.h
	@perl $(CHECKPATCH) $(CHECKPATCH_FLAGS) -f $(TESTMOD_SRCS)
	@echo "  CHECKPATCH clean: kmod/ uapi/ $(TESTMOD_DIR)/"

# kernel-doc over kmod/ and the uapi header, verbose (it then also names
# missing return descriptions): any warning fails. Then the documents'
# kernel-doc directives must name documented code (refcnt-doc-check), and
# the sysfs ABI files must parse as the kernel's get_abi.pl reads them.
KERNEL_DOC_FILES = $(wildcard kmod/*.c kmod/*.h) uapi/linux/refcnt.h
kernel-doc: $(LINUX_SOURCE_STAMP)
	@out=$$(perl $(KERNEL_DOC) -v -none $(KERNEL_DOC_FILES) 2>&1 | grep -v ': info: '); \
	if [ -n "$$out" ]; then echo "$$out" >&2; exit 1; fi
	@echo "  KERNEL-DOC clean: $(words $(KERNEL_DOC_FILES)) files"
	@tools/testing/refcnt-doc-check $(KERNEL_DOC)
	@out=$$(perl $(GET_ABI) --dir Documentation/ABI validate 2>&1); \
	if [ -n "$$out" ]; then echo "$$out" >&2; exit 1; fi
	@echo "  GET_ABI validate: $$(grep -rc '^What:' Documentation/ABI | awk -F: '{ s += $$2 } END { print s }') Documentation/ABI entries"

# Every shell script of the tree: a #! line naming sh or bash, or a
# "# shellcheck shell=" directive (the sourced files), at every severity;
# .shellcheckrc says where sourced files are found.
SHELL_SCRIPTS = $(shell find . \( -path ./build -o -path ./.git \) -prune -o -type f -print | \
	LC_ALL=C sort | while read -r f; do \
		{ head -n 1 "$$f" | grep -qaE '^\#!.*[/ ](ba)?sh$$' || \
		  head -n 3 "$$f" | grep -qa '^\# shellcheck shell='; } && echo "$$f"; done)
shellcheck:
	@command -v shellcheck >/dev/null || { echo "no shellcheck: install it (tools/testing/refcnt-setup deps)" >&2; exit 1; }
	@files="$(SHELL_SCRIPTS)"; shellcheck $$files && echo "  SHELLCHECK clean: $$(echo $$files | wc -w) scripts"

# The rig (tools/testing/rig/, Python): its unit tests (on the host, in
# seconds, before anything boots), mypy --strict and flake8, on Debian's
# python3 and its packages.
RIG_PY := /usr/bin/python3
RIG_FILES := tools/testing/rig $(shell grep -lsx '\#!/usr/bin/python3' tools/testing/* tools/testing/*/* 2>/dev/null)
.PHONY: rig-check
rig-check:
	@cd tools/testing && $(RIG_PY) -m unittest discover -s rig/tests -t . -q
	@$(RIG_PY) -m mypy --strict --no-error-summary --cache-dir $(BUILD)/mypy-cache \
		--scripts-are-modules $(RIG_FILES)
	@$(RIG_PY) -m flake8 --max-line-length 100 $(RIG_FILES)
	@echo "  RIG     unit tests, mypy --strict, flake8: $(words $(RIG_FILES)) files"

check:
	@tools/testing/refcnt-check

# make check and what it leaves out for time (Documentation/testing.rst).
check-long:
	@tools/testing/refcnt-check --long

# refcnt-compare: reads files only, needs neither librefcnt nor rtools.c;
# its JSON strings go through rjson.c, its intervals through rinterval.c.
tools: $(BUILD)/tools/refcnt-compare
$(BUILD)/tools/refcnt-compare: tools/src/refcnt-compare.c tools/src/rjson.c tools/src/rjson.h \
		tools/src/rinterval.c tools/src/rinterval.h
	@mkdir -p $(dir $@)
	@echo "  CC      $@"
	$(Q)$(CC) $(TOOLS_CFLAGS) $(TOOLS_USER_FLAGS) $(TOOLS_STATIC) -o $@ $(filter %.c,$^) \
		$(JSON_LIBS) -lm

# Workloads for make accuracy (examples/access-patterns.c).
tools: $(BUILD)/tools/access-patterns
$(BUILD)/tools/access-patterns: examples/access-patterns.c
	@mkdir -p $(dir $@)
	@echo "  CC      $@"
	$(Q)$(CC) $(TOOLS_CFLAGS) $(TOOLS_USER_FLAGS) -pthread $(TOOLS_STATIC) -o $@ $< -lnuma

# refcnt-exporter, Prometheus/OpenMetrics text (Documentation/admin-guide.rst,
# "Fleet monitoring"); rcsnap.c, its snapshot of the module, is shared with
# pmdarefcnt.
TOOLS_BIN += refcnt-exporter
RCSNAP := tools/src/rcsnap.c tools/src/rcsnap.h
# Its HTTP server is libmicrohttpd (libmicrohttpd-dev), which links only
# dynamically (its libgnutls needs libraries Debian ships no .a of): the
# exporter is a dynamic program in both links, with librefcnt, libnuma and
# jansson static as in pmdarefcnt; the rig's guests have libmicrohttpd12.
tools: $(BUILD)/tools/refcnt-exporter
$(BUILD)/tools/refcnt-exporter: $(RCSNAP) tools/src/omtext.c tools/src/omtext.h \
	tools/src/exporter_http.c tools/src/exporter_http.h
$(BUILD)/tools/refcnt-exporter: TOOLS_STATIC :=
$(BUILD)/tools/refcnt-exporter: TOOLS_LIBS = $(PMDA_LIBS) -lmicrohttpd

# pmdarefcnt, the Performance Co-Pilot agent (tools/pmda/): dynamic with
# libpcp_pmda and libpcp (libpcp-pmda3-dev, libpcp3-dev), static with
# librefcnt and libnuma. make pmda builds it into build/pmda/ with the
# files PCP's Install needs; make install puts them in $(PCP_PMDAS_DIR)/refcnt.
PCP_PMDAS_DIR ?= $(or $(shell sed -n 's/^PCP_PMDAS_DIR=//p' /etc/pcp.conf 2>/dev/null),/var/lib/pcp/pmdas)
PMDA_FILES := Install Remove pmns root domain.h help
PMDA_OUT := $(BUILD)/pmda
.PHONY: pmda install-pmda
pmda: $(PMDA_OUT)/pmdarefcnt $(addprefix $(PMDA_OUT)/,$(PMDA_FILES))
$(PMDA_OUT)/pmdarefcnt: tools/pmda/pmdarefcnt.c tools/pmda/domain.h $(RCSNAP) \
		$(TOOLS_COMMON) $(TOOLS_LIBREFCNT)
	@test -f /usr/include/pcp/pmda.h || { echo "no /usr/include/pcp/pmda.h: install libpcp-pmda3-dev and libpcp3-dev (sudo apt-get build-dep ./)" >&2; exit 1; }
	@mkdir -p $(dir $@)
	@echo "  CC      $@"
	$(Q)$(CC) $(TOOLS_CFLAGS) $(TOOLS_USER_FLAGS) -I$(TOP)/tools/pmda -o $@ \
		$(filter %.c,$^) $(PMDA_LIBS) -lpcp_pmda -lpcp -lm
$(PMDA_OUT)/%: tools/pmda/%
	@mkdir -p $(dir $@)
	@cp $< $@
install-pmda: pmda
	install -d $(DESTDIR)$(PCP_PMDAS_DIR)/refcnt
	install -m 0755 $(PMDA_OUT)/pmdarefcnt $(PMDA_OUT)/Install $(PMDA_OUT)/Remove \
		$(DESTDIR)$(PCP_PMDAS_DIR)/refcnt/
	install -m 0644 $(addprefix $(PMDA_OUT)/,pmns root domain.h help) \
		$(DESTDIR)$(PCP_PMDAS_DIR)/refcnt/
	install -d $(DESTDIR)$(PREFIX)/share/man/man1
	install -m 0644 tools/man/pmdarefcnt.1 $(DESTDIR)$(PREFIX)/share/man/man1/

# The truth from the emulator: tools/testing/truth/ (Documentation/testing.rst).
truth:
	@$(MAKE) --no-print-directory -C tools/testing/truth O=$(BUILD)/truth TOP=$(TOP)

accuracy:
	@tools/testing/refcnt-accuracy

# The long rows: a real machine's sample density (REFCNT_ACCURACY_LONG).
accuracy-long:
	@REFCNT_ACCURACY_LONG=1 tools/testing/refcnt-accuracy

# PAPI with the refcnt component (papi/components/refcnt), from Debian's
# PAPI source package: tools/testing/papi-build.
papi: lib $(LINUX_SOURCE_STAMP)
	@tools/testing/papi-build

demo:
	@TRUTH=$(TRUTH) HUB=$(HUB) tools/testing/refcnt-demo

bench:
	@tools/testing/refcnt-bench

# The core of kmod/ built natively (tools/testing/core/Makefile).
core-check:
	@$(MAKE) --no-print-directory -C tools/testing/core check O=$(BUILD)/core

# The PMU feed's attributes against the kernels' rules (tools/testing/pmu).
pmu-check:
	@$(MAKE) --no-print-directory -C tools/testing/pmu check O=$(BUILD)/pmu

FUZZ_OPS ?= 10000000
fuzz:
	@$(MAKE) --no-print-directory -C tools/testing/core fuzz O=$(BUILD)/core \
		FUZZ_OPS=$(FUZZ_OPS)

# make install [DESTDIR=] [PREFIX=/usr/local] [KVER=$(uname -r)]: the module
# (modules_install for KVER), librefcnt with its headers, pkg-config file and
# man pages, the tools and their man pages, the demo workload as an example
# ($(PREFIX)/lib/refcnt/demo-workload, its source in
# $(PREFIX)/share/refcnt/examples/), and the udev rule that gives the
# "refcnt" group read access to /dev/refcnt/nodeN; refcntd (install-refcntd)
# and the PMDA when PCP's headers are there (install-pmda). Each part is a
# target of its own: make deb installs all but the module, which DKMS builds.
UDEVDIR ?= /lib/udev/rules.d
.PHONY: install-module install-lib install-tools
install: install-module install-lib install-tools install-refcntd
	$(if $(wildcard /usr/include/pcp/pmda.h),@$(MAKE) --no-print-directory install-pmda,\
		@echo "  SKIP    pmdarefcnt: no PCP headers (apt-get install libpcp-pmda3-dev libpcp3-dev)")
	@echo "  INSTALLED under $(DESTDIR)$(PREFIX); add the group: groupadd -r refcnt"

install-module:
	@test -d $(KDIR) || { echo "no kernel build directory $(KDIR): set KVER or KDIR" >&2; exit 1; }
	$(MAKE) -C kmod KDIR=$(KDIR)
	$(MAKE) -C $(KDIR) M=$(TOP)/kmod INSTALL_MOD_PATH=$(DESTDIR) \
		INSTALL_MOD_DIR=updates modules_install
	@# The opt-in load at boot, its one line commented out; never replaced.
	install -d $(DESTDIR)/etc/modules-load.d
	test -e $(DESTDIR)/etc/modules-load.d/refcnt.conf || \
		install -m 0644 packaging/modules-load.d/refcnt.conf $(DESTDIR)/etc/modules-load.d/

install-lib: lib
	+$(LIB_MAKE) DESTDIR=$(DESTDIR) install

install-tools: tools
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/share/man/man1 \
		$(DESTDIR)$(PREFIX)/share/man/man4 $(DESTDIR)$(PREFIX)/lib/refcnt \
		$(DESTDIR)$(PREFIX)/share/refcnt/examples $(DESTDIR)$(UDEVDIR)
	install -m 0755 $(addprefix $(BUILD)/tools/,$(TOOLS_BIN)) $(DESTDIR)$(PREFIX)/bin/
	install -m 0755 $(BUILD)/demo/demo-workload $(BUILD)/tools/librefcnt-track.so \
		$(DESTDIR)$(PREFIX)/lib/refcnt/
	install -m 0644 examples/demo-workload.c \
		$(DESTDIR)$(PREFIX)/share/refcnt/examples/
	$(if $(wildcard tools/man/*.1),install -m 0644 $(wildcard tools/man/*.1) \
		$(DESTDIR)$(PREFIX)/share/man/man1/)
	install -m 0644 tools/man/refcnt.4 $(DESTDIR)$(PREFIX)/share/man/man4/
	install -m 0644 packaging/60-refcnt.rules $(DESTDIR)$(UDEVDIR)/

# make deb: the Debian packages of debian/ into build/deb/ (README,
# "Install on a real server"), by dpkg-buildpackage -us -uc on a copy of the tree: the
# files git knows or would add (uncommitted changes too, never build/),
# or, outside git, everything but build/. Debian 12 with the Build-Depends
# of debian/control (sudo apt-get build-dep ./ installs them; the test
# rig's refcnt-setup deps, far more, is not for a server).
# make deb-check: the packages' tests (tools/testing/deb/deb-check).
DEB_VERSION := $(shell sed -n '1s/^[^(]*(\([^)]*\)).*/\1/p' debian/changelog)
DEB_OUT := $(BUILD)/deb
DEB_SRC := $(DEB_OUT)/refcnt-$(DEB_VERSION)
.PHONY: deb deb-check
deb:
	@cd $(TOP) && dpkg-checkbuilddeps || { echo "make deb: install the build dependencies above (sudo apt-get build-dep ./)" >&2; exit 1; }
	@rm -rf $(DEB_OUT) && mkdir -p $(DEB_SRC)
	@if git -C $(TOP) rev-parse --is-inside-work-tree >/dev/null 2>&1; then \
		git -C $(TOP) ls-files -z --cached --others --exclude-standard | \
			(cd $(TOP) && xargs -0 -r sh -c 'for f; do if [ -e "$$f" ] || [ -L "$$f" ]; then printf "%s\0" "$$f"; fi; done' sh) | \
			tar -C $(TOP) --null -T - -cf - | tar -C $(DEB_SRC) -xf -; \
	else \
		tar -C $(TOP) --exclude=./build --exclude=./.git -cf - . | tar -C $(DEB_SRC) -xf -; \
	fi
	@echo "  DEB     $(DEB_OUT): dpkg-buildpackage -us -uc in $(DEB_SRC)"
	@cd $(DEB_SRC) && dpkg-buildpackage -us -uc
	@rm -rf $(DEB_SRC)
	@ls -1 $(DEB_OUT)/*.deb

deb-check:
	@tools/testing/deb/deb-check

# arm64, cross-built: Debian's arm64 headers of the guest kernels and the
# tools' arm64 libraries fetched (never installed) into build/arm64/, then
# make module, lib and tools with ARCH=arm64 CROSS_COMPILE=aarch64-linux-gnu-.
.PHONY: cross-arm64 cross-arm64-guest
cross-arm64:
	@tools/testing/refcnt-cross arm64

# The same, and what refcnt-vm --arch arm64 boots and runs: Debian's arm64
# kernel images, busybox-static and the selftests cross-built (make
# check-long's arm64 guest).
cross-arm64-guest: cross-arm64
	@tools/testing/refcnt-cross arm64-guest

# Build kmod/ through DKMS against every guest kernel's headers.
dkms-check:
	@tools/testing/refcnt-dkms-check

# Build kmod/ inside a kernel tree through its Kconfig (linux-source-6.1).
intree-check:
	@tools/testing/refcnt-intree-check

clean:
	rm -rf $(BUILD)

# refcntd, the migration daemon (tools/src/refcntd/). Its engine (all but
# main.c) is built once into librefcntd.a, which refcnt-run --migrate links
# too: one copy of the policy.
REFCNTD_SRCS := $(filter-out %/main.c,$(wildcard tools/src/refcntd/*.c))
REFCNTD_HDRS := $(wildcard tools/src/refcntd/*.h)
REFCNTD_OBJS := $(patsubst tools/src/refcntd/%.c,$(BUILD)/tools/refcntd.o/%.o,$(REFCNTD_SRCS))
REFCNTD_LIB := $(BUILD)/tools/refcntd.o/librefcntd.a
# refcntd goes to sbin (install-refcntd).
tools: $(BUILD)/tools/refcntd

$(BUILD)/tools/refcntd.o/%.o: tools/src/refcntd/%.c $(REFCNTD_HDRS) $(TOOLS_COMMON)
	@mkdir -p $(dir $@)
	@echo "  CC      $@"
	$(Q)$(CC) $(TOOLS_CFLAGS) $(CPPFLAGS) $(CFLAGS) -I$(TOP)/tools/src/refcntd -c -o $@ $<

$(REFCNTD_LIB): $(REFCNTD_OBJS)
	@rm -f $@
	$(Q)$(AR) rcs $@ $^

# refcnt-run --migrate (tools/src/run/migrate.c) runs the same engine.
$(BUILD)/tools/refcnt-run: TOOLS_CFLAGS += -I$(TOP)/tools/src/refcntd -pthread
$(BUILD)/tools/refcnt-run: TOOLS_LIBS := $(REFCNTD_LIB) $(TOOLS_LIBS)
$(BUILD)/tools/refcnt-run: $(REFCNTD_LIB)
# refcnt-run names objects with elfutils' libdwfl and libelf, linked
# statically like the rest (the tools run in busybox guests), or shared in
# a package (DW_LIBS). Its tracker's table layout is shared.
$(BUILD)/tools/refcnt-run: TOOLS_LIBS += $(DW_LIBS)
$(BUILD)/tools/refcnt-run: TOOLS_CFLAGS += -DREFCNT_LIBDIR='"$(PREFIX)/lib/refcnt"'
$(BUILD)/tools/refcnt-run: tools/src/track/track-table.h
# --html: the page's template, built in as a C string.
$(BUILD)/tools/refcnt-run: TOOLS_CFLAGS += -I$(BUILD)/tools/gen
$(BUILD)/tools/refcnt-run: $(BUILD)/tools/gen/report-html.h
$(BUILD)/tools/gen/report-html.h: tools/src/run/report.html
	@mkdir -p $(dir $@)
	@{ echo 'static const char report_html_template[] ='; \
	   sed 's/\\/\\\\/g; s/"/\\"/g; s/^/\t"/; s/$$/\\n"/' $<; echo ';'; } >$@

$(BUILD)/tools/refcntd: tools/src/refcntd/main.c $(REFCNTD_LIB) $(TOOLS_COMMON) $(TOOLS_LIBREFCNT)
	@echo "  CC      $@"
	$(Q)$(CC) $(TOOLS_CFLAGS) $(TOOLS_USER_FLAGS) -I$(TOP)/tools/src/refcntd \
		$(TOOLS_STATIC) -o $@ $< tools/src/rtools.c tools/src/rjson.c $(REFCNTD_LIB) \
		$(TOOLS_LIBS) -lm

# make placement: refcntd on each feed against NUMA balancing, memory
# tiering, DAMON and interleaving, on Debian's programs (hpcc, redis,
# stress-ng) and examples/placement-workloads.c, in the Debian guest,
# scored by the truth (tools/testing/placement/).
tools: $(BUILD)/tools/placement-workloads
$(BUILD)/tools/placement-workloads: examples/placement-workloads.c
	@mkdir -p $(dir $@)
	@echo "  CC      $@"
	$(Q)$(CC) $(TOOLS_CFLAGS) $(TOOLS_USER_FLAGS) -pthread $(TOOLS_STATIC) -o $@ $< -lnuma

.PHONY: placement
placement:
	@tools/testing/refcnt-placement

# refcntd's configuration (/etc/refcnt/refcntd.conf, never overwritten),
# unit and section 5 and 8 manual pages. The unit names /usr/sbin/refcntd:
# PREFIX replaces /usr in it.
.PHONY: install-refcntd
install-refcntd: tools
	install -d $(DESTDIR)$(PREFIX)/sbin $(DESTDIR)$(PREFIX)/share/man/man5 \
		$(DESTDIR)$(PREFIX)/share/man/man8 $(DESTDIR)/etc/refcnt \
		$(DESTDIR)/lib/systemd/system
	install -m 0755 $(BUILD)/tools/refcntd $(DESTDIR)$(PREFIX)/sbin/
	install -m 0644 tools/man/refcntd.conf.5 $(DESTDIR)$(PREFIX)/share/man/man5/
	install -m 0644 tools/man/refcntd.8 $(DESTDIR)$(PREFIX)/share/man/man8/
	test -e $(DESTDIR)/etc/refcnt/refcntd.conf || \
		install -m 0644 etc/refcntd.conf $(DESTDIR)/etc/refcnt/refcntd.conf
	sed 's|/usr/sbin/|$(PREFIX)/sbin/|g' packaging/refcntd.service \
		>$(DESTDIR)/lib/systemd/system/refcntd.service
	chmod 0644 $(DESTDIR)/lib/systemd/system/refcntd.service

# librefcnt-track.so, the allocation tracker refcnt-run preloads into its
# command (tools/src/track/): shared, with librefcnt.a (position-independent)
# inside; only the interposed functions are exported. Installed out of the
# PATH, in $(PREFIX)/lib/refcnt/, where refcnt-run looks for it. It runs
# inside users' programs: built with the user's (a package's: dpkg-buildflags,
# hardening included) CPPFLAGS, CFLAGS and LDFLAGS, -Werror only with WERROR=1.
TRACK_SRCS := $(wildcard tools/src/track/*.c)
TRACK_HDRS := $(wildcard tools/src/track/*.h)
tools: $(BUILD)/tools/librefcnt-track.so
$(BUILD)/tools/librefcnt-track.so: $(TRACK_SRCS) $(TRACK_HDRS) $(TOOLS_LIBREFCNT)
	@mkdir -p $(dir $@)
	@echo "  CC      $@"
	$(Q)$(CC) -O2 -g -Wall -Wextra $(if $(filter 1,$(WERROR)),-Werror) -D_GNU_SOURCE \
		-I$(TOP)/uapi -I$(TOP)/lib/include $(CPPFLAGS) $(CFLAGS) \
		-fPIC -shared -fvisibility=hidden -pthread \
		-Wl,-z,defs -Wl,-z,now $(LDFLAGS) -o $@ $(TRACK_SRCS) $(TOOLS_LIBREFCNT)

# refcnt-run's object tests (tools/testing/objects/objects-check): the
# program they run, dynamic (so that the tracker preloads into it), a
# stripped copy and a static one (bad input).
OBJECTS_OUT := $(BUILD)/objects
.PHONY: objects-tests
objects-tests: $(addprefix $(OBJECTS_OUT)/,obj-workload obj-workload-stripped obj-workload-static)
$(OBJECTS_OUT)/obj-workload: tools/testing/objects/obj-workload.c tools/testing/truth/truth-mark.h
	@mkdir -p $(dir $@)
	@echo "  CC      $@"
	$(Q)$(CC) -O2 -g -Wall -Wextra -Werror -D_GNU_SOURCE -pthread -o $@ $< -lnuma
$(OBJECTS_OUT)/obj-workload-stripped: $(OBJECTS_OUT)/obj-workload
	@strip --strip-all -o $@ $<
$(OBJECTS_OUT)/obj-workload-static: tools/testing/objects/obj-workload.c tools/testing/truth/truth-mark.h
	@mkdir -p $(dir $@)
	@echo "  CC      $@"
	$(Q)$(CC) -O2 -g -Wall -Wextra -Werror -D_GNU_SOURCE -pthread -static -o $@ $< -lnuma 2>&1 | \
		{ grep -v -e getaddrinfo -e affinity_ip || true; }

# librefcnt-track.so on the host (make track-check, a make check step of
# well under a second): the tracker preloaded into a child, its table read.
# The objects benchmarks are built with it, not run: built by nothing else
# in make check, resolve-bench had stopped compiling unseen.
.PHONY: track-check
track-check: $(OBJECTS_OUT)/track_test objects-bench-bin
	@$(OBJECTS_OUT)/track_test
$(OBJECTS_OUT)/track_test: tools/testing/objects/track_test.c tools/src/track/track-table.h \
		$(BUILD)/tools/librefcnt-track.so $(LINUX_SOURCE_STAMP)
	@mkdir -p $(dir $@)
	@echo "  CC      $@"
	$(Q)$(CC) -O2 -g -Wall -Werror -D_GNU_SOURCE -I$(KSFT_DIR) -o $@ $<

# The tools' 95% intervals of sampled counts on the host (make
# interval-check, a make check step of well under a second): Garwood's
# bounds and the counts refcnt-run and refcnt-compare give them.
.PHONY: interval-check
interval-check: $(OBJECTS_OUT)/interval_test
	@$(OBJECTS_OUT)/interval_test
$(OBJECTS_OUT)/interval_test: tools/testing/objects/interval_test.c tools/src/rinterval.c \
		tools/src/rinterval.h $(LINUX_SOURCE_STAMP)
	@mkdir -p $(dir $@)
	@echo "  CC      $@"
	$(Q)$(CC) $(TOOLS_CFLAGS) -Wno-unused-parameter -I$(KSFT_DIR) -o $@ $(filter %.c,$^) -lm

# The tools' JSON strings on the host (make json-check, a make check step
# of well under a second): names with invalid UTF-8, quotes, backslashes
# and control characters through rt_json_str(), and a region so named in
# refcnt-compare --json, parsed by python3's json.
.PHONY: json-check
json-check: $(BUILD)/json/json-strings $(BUILD)/tools/refcnt-compare
	@tools/testing/json/check-json-strings $^ tools/testing/truth/compare-data
$(BUILD)/json/json-strings: tools/testing/json/json-strings.c $(TOOLS_COMMON) $(TOOLS_LIBREFCNT)
	@mkdir -p $(dir $@)
	@echo "  CC      $@"
	$(Q)$(CC) $(TOOLS_CFLAGS) $(TOOLS_USER_FLAGS) -o $@ $(filter %.c,$^) \
		$(TOOLS_LIBREFCNT) -lnuma $(JSON_LIBS) -lm

# refcnt-run's benchmarks (tools/testing/objects/objects-bench, in make
# bench): the tracker's workloads, and refcnt-run's code resolving and
# reporting objects on the host (no module).
.PHONY: objects-bench-bin
objects-bench-bin: $(OBJECTS_OUT)/track-bench $(OBJECTS_OUT)/resolve-bench
$(OBJECTS_OUT)/track-bench: tools/testing/objects/track-bench.c
	@mkdir -p $(dir $@)
	@echo "  CC      $@"
	$(Q)$(CC) -O2 -g -Wall -Wextra -Werror -o $@ $<
$(OBJECTS_OUT)/resolve-bench: tools/testing/objects/resolve-bench.c \
		$(wildcard tools/src/run/*.c tools/src/run/*.h) $(TOOLS_COMMON) \
		tools/src/trace/policy.c tools/src/heatmap.c $(REFCNTD_LIB) $(TOOLS_LIBREFCNT) $(BUILD)/tools/gen/report-html.h
	@mkdir -p $(dir $@)
	@echo "  CC      $@"
	$(Q)$(CC) $(TOOLS_CFLAGS) -I$(TOP)/tools/src/refcntd -I$(BUILD)/tools/gen -pthread \
		-DREFCNT_LIBDIR='"$(PREFIX)/lib/refcnt"' -o $@ $< \
		$(wildcard tools/src/run/*.c) tools/src/trace/policy.c tools/src/rtools.c tools/src/rjson.c \
		tools/src/rinterval.c \
		tools/src/heatmap.c $(REFCNTD_LIB) $(TOOLS_LIBREFCNT) -lnuma $(JSON_LIBS) -ldw -lelf -lz -llzma -lbz2 -lzstd \
		-lpng -lz -lm

# The trace analyses (Documentation/trace-format.rst, "Analyses"): the
# refcnt-truth plugin's traces and lackey's read by tools/src/trace/, the
# one place of trace-reading code (trace-read.c), with the analyses'
# shared parts beside it; zstd and zlib for compressed traces.
TRACE_TOOLS := refcnt-trace refcnt-conflicts refcnt-policy refcnt-replay refcnt-sharing \
	refcnt-tdist
TRACE_DIR := tools/src/trace
TRACE_COMMON := $(wildcard $(TRACE_DIR)/*.c $(TRACE_DIR)/*.h)
TOOLS_BIN += $(TRACE_TOOLS)
tools: $(addprefix $(BUILD)/tools/,$(TRACE_TOOLS))
$(addprefix $(BUILD)/tools/,$(TRACE_TOOLS)): TOOLS_CFLAGS += -I$(TOP)/$(TRACE_DIR)
$(addprefix $(BUILD)/tools/,$(TRACE_TOOLS)): TOOLS_LIBS += -lzstd -lz
$(addprefix $(BUILD)/tools/,$(TRACE_TOOLS)): $(TRACE_COMMON)
# refcnt-tdist draws its bar charts with the heatmaps' renderer.
$(BUILD)/tools/refcnt-tdist: tools/src/heatmap.c tools/src/heatmap.h

# MACPO's controlled trace as a program (refcnt-conflicts(1)); its loop is
# inside the truth window's marks, for refcnt-vm --trace.
tools: $(BUILD)/tools/conflict-arrays
$(BUILD)/tools/conflict-arrays: examples/conflict-arrays.c tools/testing/truth/truth-mark.h
	@mkdir -p $(dir $@)
	@echo "  CC      $@"
	$(Q)$(CC) $(TOOLS_CFLAGS) $(TOOLS_USER_FLAGS) -DTRUTH_MARKS -I$(TOP)/tools/testing/truth \
		$(TOOLS_STATIC) -o $@ $<
