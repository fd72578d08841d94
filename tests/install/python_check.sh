#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# python_check.sh BUILD_DIR SOURCE_DIR WORK_DIR [PYTHON]
#
# The xdev Python package as installed (issue 47 item 3): `cmake --install`
# into WORK_DIR/prefix, then, from another directory, with neither
# XDEV_LIBRARY nor LD_LIBRARY_PATH set, the installed package imports, loads
# the installed libxdev ("installed beside the package") and uses it; again
# after the prefix is moved (the library is found relative to the package).
# Then `pip install` of SOURCE_DIR/python (into a --target directory, no
# index) finds the installed libxdev through XDEV_LIBRARY and through the
# loader (LD_LIBRARY_PATH). A separate check from install_test.sh. Exits 77
# (skip) without Python 3 or in a sanitizer build; the pip part is skipped,
# with the reason, where no Python has pip, setuptools and wheel.
set -eu
build=$1 src=$2 work=$3 want_py=${4:-}
fail() { echo "FAIL: $*" >&2; exit 1; }

py=""
for p in $want_py python3 /usr/bin/python3; do
    if command -v "$p" >/dev/null 2>&1; then py=$p; break; fi
done
[ -n "$py" ] || { echo "SKIP: no Python 3 found"; exit 77; }
if ldd "$build/lib/libxdev.so" 2>/dev/null | grep -qE 'lib(a|t)san'; then
    echo "SKIP: libxdev is built with a sanitizer, whose runtime Python does not load first"
    exit 77
fi

rm -rf "$work"
mkdir -p "$work/elsewhere"
prefix=$work/prefix
cmake --install "$build" --prefix "$prefix" >"$work/install.log" 2>&1 ||
    { cat "$work/install.log"; fail "cmake --install failed"; }
init=$(find "$prefix" -path '*/xdev/__init__.py' | head -n 1)
[ -n "$init" ] || fail "the xdev Python package was not installed under $prefix"
site=$(dirname "$(dirname "$init")")
[ -f "$site/xdev/_install.py" ] || fail "_install.py not installed beside the package"
[ -z "$(find "$site/xdev" -name '*.in' -o -name '__pycache__')" ] || fail "a template or cache installed"
echo "installed: $site/xdev"

# $1: the prefix the library must come from, $2: how it must have been found, $3: PYTHONPATH
use() {
    (cd "$work/elsewhere" && env -u XDEV_LIBRARY -u LD_LIBRARY_PATH XDEV_BACKEND=cpu \
        XDEV_CPU_DEVICES=2 PYTHONPATH="$3" ${4:+XDEV_LIBRARY="$4"} ${5:+LD_LIBRARY_PATH="$5"} \
        "$py" -c '
import os, sys, xdev
prefix, how = sys.argv[1], sys.argv[2]
path, found = xdev.library_path()
print(f"  xdev {xdev.version()}: {path} ({found})")
assert found == how, f"libxdev found by {found!r}, expected {how!r}"
assert os.path.realpath(path).startswith(os.path.realpath(prefix) + os.sep), f"{path} not under {prefix}"
assert xdev.device_count("cpu") == 2
m = xdev.Memory(16, "cpu:1").copy_from(b"0123456789abcdef")
assert m.to_bytes() == b"0123456789abcdef"
' "$1" "$2") || fail "the package ($3, $2) did not work as installed"
}
echo "== the installed package, libxdev beside it"
use "$prefix" "installed beside the package" "$site"
echo "== the prefix moved"
mv "$prefix" "$work/moved"
use "$work/moved" "installed beside the package" "$work/moved${site#"$prefix"}"
lib=$(find "$work/moved" -name 'libxdev.so.0' | head -n 1)

echo "== pip install ./python"
pip_py=""
for p in $want_py python3 /usr/bin/python3; do
    command -v "$p" >/dev/null 2>&1 || continue
    if "$p" -c 'import setuptools, wheel, importlib.util as u; assert u.find_spec("pip")' 2>/dev/null; then pip_py=$p; break; fi
done
if [ -z "$pip_py" ]; then
    echo "SKIP (this part): no Python with pip, setuptools and wheel for an offline pip install"
    exit 0
fi
cp -r "$src/python" "$work/pysrc"
rm -rf "$work/pysrc/build" "$work/pysrc"/*.egg-info
"$pip_py" -m pip install --no-deps --no-build-isolation --no-index --quiet \
    --target "$work/pip" "$work/pysrc" >"$work/pip.log" 2>&1 ||
    { cat "$work/pip.log"; fail "pip install ./python failed"; }
[ ! -e "$work/pip/xdev/_install.py" ] || fail "pip installed a cmake-only _install.py"
py=$pip_py
use "$work/moved" "XDEV_LIBRARY" "$work/pip" "$lib"
use "$work/moved" "the loader" "$work/pip" "" "$(dirname "$lib")"
echo "python_check: ok"
