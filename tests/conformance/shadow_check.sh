#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# shadow_check.sh - a conformance suite run with shadow execution on
# (XDEV_SHADOW=cpu on the cpu backend, set by the ctest entry): the CPU
# shadowing itself must find no difference, so the suite must pass and no
# "first difference" report may appear. Operations the shadow cannot replay
# ("not mirrored", reported once per call and reason) are allowed: they are
# listed in docs/observability.md.
#
# Usage: shadow_check.sh <suite executable> <suite>
set -u
exe=$1
suite=$2
log=$(mktemp)
trap 'rm -f "$log"' EXIT
"$exe" >"$log" 2>&1
rc=$?
cat "$log"
if [ "$rc" -eq 77 ]; then exit 77; fi
if [ "$rc" -ne 0 ]; then
    echo "FAIL $suite with XDEV_SHADOW=cpu: the suite itself failed (exit $rc)"
    exit 1
fi
n=$(grep -c 'xdev shadow: first difference' "$log")
if [ "$n" -ne 0 ]; then
    echo "FAIL $suite with XDEV_SHADOW=cpu: $n difference(s) between the CPU and its own shadow"
    exit 1
fi
echo "PASS $suite with XDEV_SHADOW=cpu: no difference ($(grep -c 'not mirrored on the CPU' "$log") kinds of operation not mirrored)"
