#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# cmake/install-deps.sh - installs the Debian packages xdev needs to build and test, when missing.
#
# Checks each package with `dpkg -s`; if any is missing runs `apt-get update` and then
# `apt-get install -y` for just those (through sudo when not root). Does nothing when all are
# present, so it is cheap to run before every build.
set -euo pipefail

packages=(
  cmake gcc libc6-dev make pkg-config  # build
  check libsubunit-dev                 # test suites (Check, found by pkg-config)
  libopenblas-dev libfftw3-dev         # CPU BLAS and FFT
  clang libclang-rt-dev                # libFuzzer target (CI)
  clang-format python3                 # tools/check_tree.sh (CI step "structure")
  hipcc libamdhip64-dev rocm-device-libs librocm-smi-dev  # HIP plugin (libxdev-hip.so)
  librocprim-dev                       # HIP plugin's prim table (rocPRIM headers; XDEV_HIP_PRIMITIVES)
  chromium                             # tests/observe: the memory view in a real browser
  openmpi-bin libopenmpi-dev           # mpirun for the tests; MPI for the mpi transport (transports/mpi)
  python3-numpy                        # tests: DLPack with NumPy (interop.numpy)
  gcc-aarch64-linux-gnu libc6-dev-arm64-cross  # tests: cpu_fiber.builds (aarch64 fiber switch)
)

if ! command -v dpkg >/dev/null 2>&1; then
  echo "install-deps: no dpkg here (not Debian/Ubuntu); install the equivalents of:" >&2
  echo "install-deps:   ${packages[*]}" >&2
  exit 0
fi

missing=()
for p in "${packages[@]}"; do
  # dpkg -s also knows removed packages whose config files remain: require "install ok installed".
  if ! dpkg -s "$p" 2>/dev/null | grep -q '^Status: install ok installed$'; then
    missing+=("$p")
  fi
done

if [ "${#missing[@]}" -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi

# DEBIAN_FRONTEND through env: sudo would drop it from the environment.
apt=(env DEBIAN_FRONTEND=noninteractive apt-get)
if [ "$(id -u)" -ne 0 ]; then
  if ! command -v sudo >/dev/null 2>&1; then
    echo "install-deps: missing ${missing[*]}, and not root and no sudo to install them" >&2
    exit 1
  fi
  apt=(sudo "${apt[@]}")
fi

echo "install-deps: installing ${missing[*]}"
"${apt[@]}" update
"${apt[@]}" install -y --no-install-recommends "${missing[@]}"
