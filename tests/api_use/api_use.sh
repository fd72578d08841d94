#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# tests/api_use/api_use.sh CC SRC_DIR INCLUDE_DIRS(colon-separated) API_USE_EXE
# The public helpers of xdev/check.h and XDEV_NODISCARD as a program meets them:
# 1. api_use (built with XDEV_NODISCARD, -Werror) runs and checks XDEV_TRY, the
#    comm calls' plain void *[] arrays, and prints "api_use: ok";
# 2. `api_use must-fail` exits 1 printing file:line, the call, the status and
#    the message (XDEV_MUST);
# 3. ignored_status.c does not compile with -DXDEV_NODISCARD -Werror, and the
#    compiler names the ignored call; it compiles without XDEV_NODISCARD.
set -u
cc=$1 src=$2 incs=$3 exe=$4
fail() { echo "api_use.sh: $*" >&2; exit 1; }
out=$("$exe") || fail "api_use failed: $out"
[ "$out" = "api_use: ok" ] || fail "api_use printed: $out"
err=$("$exe" must-fail 2>&1 >/dev/null)
rc=$?
[ $rc -eq 1 ] || fail "XDEV_MUST exited $rc, want 1"
case "$err" in
*api_use.c:*"xdev_set_device(xdev_cpu(63))"*XDEV_ERROR_INVALID_DEVICE*cpu*63*) ;;
*) fail "XDEV_MUST printed: $err" ;;
esac
inc=""
for d in $(echo "$incs" | tr ':' ' '); do inc="$inc -I$d"; done
# shellcheck disable=SC2086 # $inc is a list of options
msg=$("$cc" -std=c11 -Wall -Werror -DXDEV_NODISCARD $inc -c -o /dev/null "$src/ignored_status.c" 2>&1) &&
    fail "an ignored status compiled with XDEV_NODISCARD"
case "$msg" in
*xdev_synchronize*) ;;
*) fail "the compiler did not name the ignored call: $msg" ;;
esac
# shellcheck disable=SC2086
"$cc" -std=c11 -Wall -Werror $inc -c -o /dev/null "$src/ignored_status.c" ||
    fail "without XDEV_NODISCARD an ignored status must compile"
echo "api_use.sh: ok"
