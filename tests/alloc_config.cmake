# SPDX-License-Identifier: Apache-2.0
# The XDEV_ALLOC_CONF parser (core/alloc/alloc_config.c), linked in directly
# because it is internal; included from tests/CMakeLists.txt. Its fuzzer is in
# fuzz/fuzz.cmake.
add_executable(test_alloc_config test_alloc_config.c ${PROJECT_SOURCE_DIR}/core/alloc/alloc_config.c)
target_include_directories(test_alloc_config PRIVATE ${PROJECT_SOURCE_DIR}/core)
target_link_libraries(test_alloc_config PRIVATE xdev_test_common m)
xdev_target_warnings(test_alloc_config)
xdev_add_test(alloc_config.parser COMMAND test_alloc_config parser LABELS unit)
xdev_add_test(alloc_config.env_bad COMMAND test_alloc_config env_bad
  ENV XDEV_BACKEND=cpu "XDEV_ALLOC_CONF=max_split_size_mb:8,bogus:1" LABELS unit)
