# SPDX-License-Identifier: Apache-2.0
# Contract suite (issue 16, items 13, 15, 16, 17), included from
# tests/CMakeLists.txt. One executable, one ctest entry per scenario: each
# needs its own environment because xdev reads it once per process. The
# all_backends and visible_empty entries load the fake cuda plugin
# (tests/plugins/fake_cuda.c) beside the CPU backend.
xdev_add_suite(test_contract)
add_dependencies(test_contract xdev_test_plugin_good)

# A successful call leaves the error state as it was: under auto (cuda and
# hip probed and missing), with cpu named, and with the fake cuda loaded.
xdev_add_test(contract.error_state COMMAND test_contract error_state
  ENV XDEV_PLUGIN_PATH=/nonexistent XDEV_CPU_DEVICES=2)
xdev_add_test(contract.error_state_cpu COMMAND test_contract error_state
  ENV XDEV_BACKEND=cpu XDEV_PLUGIN_PATH=/nonexistent XDEV_CPU_DEVICES=2)
xdev_add_test(contract.error_state_fake_cuda COMMAND test_contract error_state
  ENV XDEV_BACKEND=cuda XDEV_PLUGIN_PATH=${GOOD} XDEV_CPU_DEVICES=2)
# XDEV_VISIBLE_DEVICES selects accelerators only.
xdev_add_test(contract.visible_empty COMMAND test_contract visible_empty
  ENV XDEV_PLUGIN_PATH=${GOOD} XDEV_CPU_DEVICES=2 XDEV_VISIBLE_DEVICES=)
xdev_add_test(contract.visible_cpu COMMAND test_contract visible_cpu
  ENV XDEV_BACKEND=cpu XDEV_CPU_DEVICES=4 XDEV_VISIBLE_DEVICES=3,1)
# Every malformed value's message lists the accepted forms (children set the
# variables themselves).
xdev_add_test(contract.env_messages COMMAND test_contract env_messages
  ENV XDEV_PLUGIN_PATH=/nonexistent)
# Seeding and synchronize across the CPU and the (fake) cuda backend.
xdev_add_test(contract.all_backends COMMAND test_contract all_backends
  ENV XDEV_BACKEND=cuda XDEV_PLUGIN_PATH=${GOOD} XDEV_CPU_DEVICES=2)
