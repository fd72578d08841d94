# SPDX-License-Identifier: Apache-2.0
# Bad input (issue 16): every public function family with bad arguments, each
# case in its own forked child (a crash fails that case only); included from
# tests/CMakeLists.txt. Two CPU devices for the cross-device cases; no plugin
# path, so cuda:0 names an absent backend.
xdev_add_suite(test_bad_input)
xdev_add_suite(test_bad_input_math)
xdev_add_test(bad_input COMMAND test_bad_input bad_input
  ENV XDEV_BACKEND=cpu XDEV_CPU_DEVICES=2 XDEV_PLUGIN_PATH=/nonexistent LABELS hardening)
xdev_add_test(bad_input.math COMMAND test_bad_input_math bad_input_math
  ENV XDEV_BACKEND=cpu XDEV_CPU_DEVICES=2 XDEV_PLUGIN_PATH=/nonexistent LABELS hardening)
