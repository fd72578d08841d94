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
found="" py=""
for p in ${2:-} python3 /usr/bin/python3; do
    command -v "$p" >/dev/null 2>&1 || continue
    found=$p
    if "$p" -c "import numpy" 2>/dev/null; then py=$p; break; fi
done
if [ -z "$found" ]; then
    echo "SKIP: no Python 3 found"
    exit 77
elif [ -z "$py" ]; then
    echo "SKIP: no Python with NumPy (tried ${2:-} python3 /usr/bin/python3; Debian: python3-numpy)"
    exit 77
fi
lib=${XDEV_LIBRARY:-}
if [ -n "$lib" ]; then
    san=$(ldd "$lib" 2>/dev/null | awk '/lib(a|ub|t)san/ { printf "%s ", $3 }')
    if [ -n "$san" ]; then
        echo "note: libxdev is built with a sanitizer: preloading ${san% }"
        export LD_PRELOAD="${san% }${LD_PRELOAD:+ $LD_PRELOAD}"
        export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
        # Under Python, TSan's exit check runs before libxdev's destructor has
        # joined the stream workers that retired (LD_DEBUG=files: no fini is
        # called once it reported), so they read as leaked threads; a C program
        # linked with or dlopen'ing libxdev is clean. Races are still reported.
        export TSAN_OPTIONS="${TSAN_OPTIONS:+$TSAN_OPTIONS:}report_thread_leaks=0"
    fi
fi
exec "$py" "$script"
