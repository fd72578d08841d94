#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# build_backend.sh BUILD_DIR WORK_DIR NAME XDEV_INFO - the steps of backends/null/README.md:
# install the build tree into WORK_DIR/prefix, copy the installed backend
# template out of it, build it against the installed package only (no path
# into the source tree) as backend NAME, and check that xdev-info of the
# build tree loads it by name from XDEV_PLUGIN_PATH. The conformance entries
# outoftree/* (tests/conformance) then run on WORK_DIR/backend/build.
set -eu
build=$1 work=$2 name=$3 info=$4
fail() { echo "FAIL: $*" >&2; exit 1; }

rm -rf "$work"
mkdir -p "$work"
prefix=$work/prefix
cmake --install "$build" --prefix "$prefix" >"$work/install.log" 2>&1 ||
    { cat "$work/install.log"; fail "cmake --install failed"; }
template=$prefix/share/xdev/backend-template
test -f "$template/null_backend.c" || fail "the backend template is not installed in $template"
cp -r "$template" "$work/backend"
echo "== configure $work/backend against $prefix only"
cmake -S "$work/backend" -B "$work/backend/build" -DCMAKE_PREFIX_PATH="$prefix" \
    -DBACKEND_NAME="$name" -DCMAKE_BUILD_TYPE=Debug >"$work/configure.log" 2>&1 ||
    { cat "$work/configure.log"; fail "configuring the backend failed"; }
cmake --build "$work/backend/build" >"$work/build.log" 2>&1 ||
    { cat "$work/build.log"; fail "building the backend failed"; }
plugin=$work/backend/build/libxdev-$name.so
test -f "$plugin" || fail "$plugin was not built"
if grep -q "xdev_DIR:PATH=$prefix" "$work/backend/build/CMakeCache.txt"; then :; else
    fail "the backend did not find xdev in $prefix"
fi
echo "== xdev-info with XDEV_PLUGIN_PATH=$work/backend/build XDEV_BACKEND=$name"
out=$(env XDEV_PLUGIN_PATH="$work/backend/build" XDEV_BACKEND="$name" "$info" 2>&1) ||
    { echo "$out"; fail "xdev-info failed"; }
echo "$out"
echo "$out" | grep -q "^  $name " || fail "xdev-info does not list the backend $name"
echo "$out" | grep -q "$name:0 " || fail "xdev-info lists no device $name:0"
echo "ok: $plugin"
