#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# tests/python/run_tests.sh SCRIPT [PYTHON] - runs a test of the xdev Python
# package with the first Python that has NumPy (the configured one, then
# python3, then Debian's /usr/bin/python3 with python3-numpy). Exits 77
# (skipped, the reason printed) when there is no Python 3 or none has NumPy.
# Against a sanitizer build's libxdev (XDEV_LIBRARY), whose runtime an
# uninstrumented Python does not load first, the runtime libxdev is linked
# with is preloaded (LD_PRELOAD; ASan's leak check off: the interpreter's own
# allocations are not leaks), so the package's calls run under the sanitizer.
script=$1
lib=${XDEV_LIBRARY:-}
if [ -n "$lib" ]; then
    san=$(ldd "$lib" 2>/dev/null | awk '/lib(a|ub|t)san/ { printf "%s ", $3 }')
    if [ -n "$san" ]; then
        echo "note: libxdev is built with a sanitizer: preloading ${san% }"
        export LD_PRELOAD="${san% }${LD_PRELOAD:+ $LD_PRELOAD}"
        export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
    fi
fi
found=""
for py in ${2:-} python3 /usr/bin/python3; do
    command -v "$py" >/dev/null 2>&1 || continue
    found=$py
    if "$py" -c "import numpy" 2>/dev/null; then
        exec "$py" "$script"
    fi
done
if [ -z "$found" ]; then
    echo "SKIP: no Python 3 found"
else
    echo "SKIP: no Python with NumPy (tried ${2:-} python3 /usr/bin/python3; Debian: python3-numpy)"
fi
exit 77
