#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# tests/fiber/fiber_builds.sh - the CPU fiber switches this machine does not run:
# compiles backends/cpu/cpu_fiber.c and cpu_fiber_switch.c (compile only, warnings
# as errors) with the ucontext fallback (-DXDEV_CPU_FIBER_UCONTEXT) for this host,
# and for aarch64 both its register switch and the fallback, with aarch64-linux-gnu-gcc
# (Debian: gcc-aarch64-linux-gnu; cmake/install-deps.sh installs it). Exit 77
# (ctest: skipped) with the reason when that compiler is missing, after the
# host check. Running the ucontext switch: .ci/run's build with
# -DXDEV_CPU_FIBER_UCONTEXT=ON runs the kernel suites.
#
#   fiber_builds.sh <source dir> <binary dir> <host C compiler>
set -eu
src=$1 bin=$2 cc=$3
flags="-std=c11 -O2 -Wall -Wextra -Werror -D_GNU_SOURCE -I$src/include -I$bin/include -I$src/backends"
fiber=$src/backends/cpu/cpu_fiber.c
switch=$src/backends/cpu/cpu_fiber_switch.c
for file in "$fiber" "$switch"; do
  # shellcheck disable=SC2086
  $cc $flags -DXDEV_CPU_FIBER_UCONTEXT -c "$file" -o /dev/null
done
echo "fiber_builds: host ($cc) with XDEV_CPU_FIBER_UCONTEXT: compiles"
cross=aarch64-linux-gnu-gcc
if ! command -v $cross >/dev/null 2>&1; then
  echo "fiber_builds: SKIP aarch64: no $cross (apt-get install gcc-aarch64-linux-gnu)"
  exit 77
fi
# The register switch must be the one chosen: its symbol is in the object.
obj=$(mktemp)
trap 'rm -f "$obj"' EXIT
# shellcheck disable=SC2086
$cross $flags -c "$fiber" -o /dev/null
# shellcheck disable=SC2086
$cross $flags -c "$switch" -o "$obj"
if ! aarch64-linux-gnu-nm "$obj" 2>/dev/null | grep -q ' xdev_cpu_fiber_jump$'; then
  echo "fiber_builds: aarch64 object has no xdev_cpu_fiber_jump: the register switch was not built" >&2
  exit 1
fi
echo "fiber_builds: aarch64 register switch: compiles"
for file in "$fiber" "$switch"; do
  # shellcheck disable=SC2086
  $cross $flags -DXDEV_CPU_FIBER_UCONTEXT -c "$file" -o /dev/null
done
echo "fiber_builds: aarch64 with XDEV_CPU_FIBER_UCONTEXT: compiles"
