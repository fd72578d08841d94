# SPDX-License-Identifier: Apache-2.0
# Random-number benchmark (included from bench/CMakeLists.txt), run by hand:
#   build/bench/rng_bench [elements] [reps]   fill GB/s per kind/dtype on the
#   default backend; on the CPU also a plain scalar loop and a device-to-device
#   copy of the same bytes in the same run (the "/ copy" column: issue 50).
# On the H100, bench/gpu/rng_torch.py prints torch's figures for the same sizes.
add_executable(rng_bench rng_bench.c)
target_link_libraries(rng_bench PRIVATE xdev::xdev m)
xdev_target_warnings(rng_bench)
