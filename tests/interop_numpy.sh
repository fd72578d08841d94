#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# tests/interop_numpy.sh - runs tests/interop_numpy.py with the first Python
# that has NumPy (a virtual environment's python3 may not; Debian's
# /usr/bin/python3 with python3-numpy does). Exits 77 (skipped, the reason
# printed) when none has it, or in a sanitizer build.
# A sanitizer build's libxdev needs its runtime loaded first, which a Python
# interpreter does not do: test_interop runs the same calls under it.
if ldd "$XT_LIBXDEV_DIR/libxdev.so" 2>/dev/null | grep -qE 'lib(a|t)san'; then
    echo "SKIP: libxdev is built with a sanitizer, whose runtime Python does not load first"
    echo "      (test_interop covers the same calls in this build)"
    exit 77
fi
for py in python3 /usr/bin/python3; do
    if command -v "$py" >/dev/null 2>&1 && "$py" -c "import numpy" 2>/dev/null; then
        exec "$py" "$(dirname "${BASH_SOURCE[0]}")/interop_numpy.py"
    fi
done
echo "SKIP: no Python with NumPy (Debian: python3-numpy)"
exit 77
