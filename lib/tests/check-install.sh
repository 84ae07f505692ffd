#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
#
# check-install.sh ROOT PREFIX: a program builds against what "make install
# DESTDIR=ROOT PREFIX=PREFIX" installed and nothing else (no -I into the
# source tree), through the installed refcnt.pc, as C and as C++ headers,
# and runs with the installed shared library; no installed header includes
# <linux/refcnt.h>, which belongs to the distribution's kernel headers.
set -e
root=$1 prefix=$2
dir=$(cd "$(dirname "$0")" && pwd)
: "${CC:=cc}" "${CXX:=c++}"
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT

if grep -l '^#include <linux/refcnt.h>' "$root$prefix"/include/refcnt/*.h; then
	echo "check-install: installed headers include <linux/refcnt.h>"; exit 1
fi
export PKG_CONFIG_LIBDIR="$root$prefix/lib/pkgconfig" PKG_CONFIG_SYSROOT_DIR="$root"
cflags=$(pkg-config --cflags refcnt)
libs=$(pkg-config --libs refcnt)
static_libs=$(pkg-config --libs --static refcnt)
# shellcheck disable=SC2086
$CC -Wall -Wextra -Werror $cflags "$dir/installed.c" $libs -o "$t/shared"
# shellcheck disable=SC2086
$CC -Wall -Wextra -Werror $cflags "$dir/installed.c" -static $static_libs -o "$t/static"
if command -v "$CXX" >/dev/null 2>&1; then
	# shellcheck disable=SC2086
	$CXX -Wall -Wextra -Werror -x c++ -fsyntax-only $cflags "$dir/installed.c"
fi
out=$(LD_LIBRARY_PATH="$root$prefix/lib" "$t/shared")
[ "$out" = ok ] || { echo "check-install: shared program said '$out'"; exit 1; }
out=$("$t/static")
[ "$out" = ok ] || { echo "check-install: static program said '$out'"; exit 1; }
echo "ok check-install: built and ran against $prefix/include and $prefix/lib only"
