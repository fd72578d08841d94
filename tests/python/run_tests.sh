#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# tests/python/run_tests.sh SCRIPT [PYTHON] - runs a test of the xdev Python
# package with the first Python that has NumPy (the configured one, then
# python3, then Debian's /usr/bin/python3 with python3-numpy). Exits 77
# (skipped, the reason printed) when there is no Python 3, none has NumPy, or
# in a sanitizer build (an instrumented libxdev cannot be loaded into an
# uninstrumented Python without its runtime preloaded).
script=$1
lib=${XDEV_LIBRARY:-}
if [ -n "$lib" ] && ldd "$lib" 2>/dev/null | grep -qE 'lib(a|t)san'; then
    echo "SKIP: libxdev is built with a sanitizer, whose runtime Python does not load first"
    exit 77
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
