#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# package_test.sh BUILD_DIR WORK_DIR VERSION [EXTRA_CFLAGS]
#
# `cpack` in BUILD_DIR (cmake/XdevPackaging.cmake) must make a Debian package per
# component - xdev, and xdev-cuda / xdev-hip / xdev-mpi for each plugin and transport
# built - and one tarball of everything. xdev's Depends names no CUDA, ROCm or MPI
# library (a machine without a GPU installs none); each plugin package depends on xdev of
# the same version and holds its plugin alone, under lib/xdev/. Then, as on a machine
# without a GPU: xdev's package alone is unpacked into an empty root (dpkg-deb -x) and the
# README's quick start is built against it with pkg-config and run; and with every package
# unpacked into another root, libxdev looks for plugins in that root's lib/xdev and tries
# the cuda plugin from there. Exits 77 (skip, with the reason) where dpkg-deb or cpack is
# missing.
set -eu
build=$1 work=$2 version=$3 extra_cflags=${4:-}
fail() { echo "FAIL: $*" >&2; exit 1; }
for tool in dpkg-deb cpack pkg-config; do
    if ! command -v $tool >/dev/null 2>&1; then
        echo "SKIP: $tool not found: the Debian packages cannot be made or unpacked here"
        exit 77
    fi
done
cc=${CC:-cc}
rm -rf "$work"
mkdir -p "$work/pkg"
echo "== cpack (DEB, TGZ)"
# gzip: the packages' content is what is tested, and xz costs CI most of the time
(cd "$build" && cpack --config CPackConfig.cmake -B "$work/pkg" -D CPACK_DEBIAN_COMPRESSION_TYPE=gzip) \
    >"$work/cpack.log" 2>&1 ||
    { cat "$work/cpack.log"; fail "cpack failed"; }
components=$(sed -n 's/^set(CPACK_COMPONENTS_ALL "\(.*\)")$/\1/p' "$build/CPackConfig.cmake" | tr ';' ' ')
echo "components: $components"
case " $components " in *" xdev "*) ;; *) fail "no xdev component in CPACK_COMPONENTS_ALL: '$components'" ;; esac
deb() { # component -> its .deb
    if [ "$1" = xdev ]; then name=xdev; else name=xdev-$1; fi
    f=$(ls "$work/pkg/${name}_${version}_"*.deb 2>/dev/null | head -n 1)
    [ -n "$f" ] || fail "no package ${name}_${version}_*.deb among: $(ls "$work/pkg")"
    echo "$f"
}
core=$(deb xdev)
depends=$(dpkg-deb -f "$core" Depends)
echo "xdev Depends: $depends"
if echo "$depends" | grep -Eiq 'cuda|cublas|cufft|nvidia|amdhip|rocm|hip|mpi'; then
    fail "the xdev package depends on a GPU or MPI library: $depends"
fi
if dpkg-deb -c "$core" | grep -Eq 'libxdev-[a-z0-9_]+\.so|libxdevcomm-'; then
    fail "the xdev package holds a plugin: $(dpkg-deb -c "$core" | grep -E 'libxdev-|libxdevcomm-')"
fi
for comp in $components; do
    [ "$comp" = xdev ] && continue
    f=$(deb "$comp")
    d=$(dpkg-deb -f "$f" Depends)
    echo "xdev-$comp Depends: $d"
    echo "$d" | grep -q "xdev (= $version)" || fail "xdev-$comp does not depend on xdev (= $version): $d"
    files=$(dpkg-deb -c "$f" | awk '{print $6}' | grep -v '/$')
    if [ "$comp" = mpi ]; then want=libxdevcomm-mpi.so; else want=libxdev-$comp.so; fi
    [ "$(echo "$files" | wc -l)" -eq 1 ] && echo "$files" | grep -q "/lib[^/]*/xdev/$want\$" ||
        fail "xdev-$comp should hold lib/xdev/$want alone: $files"
done
tarball=$(ls "$work/pkg/xdev-$version-"*.tar.gz 2>/dev/null | head -n 1)
[ -n "$tarball" ] || fail "no tarball xdev-$version-*.tar.gz"
listing=$(tar tzf "$tarball")
echo "$listing" | grep -q '/include/xdev/xdev.h$' || fail "the tarball lacks include/xdev/xdev.h"
for comp in $components; do
    [ "$comp" = xdev ] && continue
    if [ "$comp" = mpi ]; then want=libxdevcomm-mpi.so; else want=libxdev-$comp.so; fi
    echo "$listing" | grep -q "/xdev/$want\$" || fail "the tarball lacks $want"
done

# A machine without a GPU: xdev's package alone, the README's quick start against it.
root=$work/root-cpu
dpkg-deb -x "$core" "$root"
pc=$(find "$root" -name xdev.pc | head -n 1)
[ -n "$pc" ] || fail "xdev.pc not in the xdev package"
readme=$(find "$root" -path '*/doc/*' -name README.md | head -n 1)
[ -n "$readme" ] || fail "README.md not in the xdev package"
awk '/^<!-- docs-test: run -->/ { next_block = 1; next } next_block && /^```c/ { inb = 1; next }
     inb && /^```/ { exit } inb { print }' "$readme" > "$work/quickstart.c"
export PKG_CONFIG_PATH
PKG_CONFIG_PATH=$(dirname "$pc")
libdir=$(pkg-config --variable=libdir xdev)
# shellcheck disable=SC2046,SC2086
$cc $extra_cflags "$work/quickstart.c" $(pkg-config --cflags --libs xdev) -Wl,-rpath,"$libdir" \
    -o "$work/quickstart" || fail "the quick start does not build against the unpacked xdev package"
out=$(env -u LD_LIBRARY_PATH -u XDEV_PLUGIN_PATH XDEV_BACKEND=cpu "$work/quickstart") ||
    fail "the quick start failed: $out"
echo "$out"
[ "$out" = "quickstart: C[0] = 128 on cpu:0 (ok)" ] || fail "unexpected quick start output: $out"

# Every package unpacked: libxdev finds the plugins in its own lib/xdev.
root=$work/root-all
for comp in $components; do dpkg-deb -x "$(deb "$comp")" "$root"; done
PKG_CONFIG_PATH=$(dirname "$(find "$root" -name xdev.pc | head -n 1)")
libdir=$(pkg-config --variable=libdir xdev)
# shellcheck disable=SC2046,SC2086
$cc $extra_cflags "$work/quickstart.c" $(pkg-config --cflags --libs xdev) -Wl,-rpath,"$libdir" \
    -o "$work/quickstart-all" || fail "the quick start does not build against every package"
log=$(env -u LD_LIBRARY_PATH -u XDEV_PLUGIN_PATH XDEV_BACKEND=cuda,cpu XDEV_LOG=1 "$work/quickstart-all" 2>&1) ||
    fail "the quick start with every package failed: $log"
echo "$log" | grep -q "^xdev: plugins are looked for in .*root-all/.*/xdev\$" ||
    fail "libxdev does not look for plugins in the unpacked lib/xdev: $log"
case " $components " in
*" cuda "*) echo "$log" | grep -q "^xdev: backend cuda: .*root-all/.*/xdev/libxdev-cuda.so" ||
    fail "the unpacked cuda plugin was not the one tried: $log" ;;
esac
echo "PASS"
