# Caching allocator suites (issue 3), included from tests/CMakeLists.txt.
target_sources(xdev_test_common PRIVATE ${CMAKE_CURRENT_LIST_DIR}/common/json_check.c)

xdev_add_suite(test_allocator)
# Conformance entries (${CONF}: the backend under test, tests/CMakeLists.txt);
# allocator.oom tests the CPU backend's capacity (XDEV_CPU_MEMORY) and stays cpu.
set(ALLOC_ENV ${CONF} XDEV_CPU_DEVICES=4 XDEV_CPU_MEMORY=512M)
xdev_add_test(allocator.caching COMMAND test_allocator caching ENV ${ALLOC_ENV}
  LABELS multi-device conformance)
xdev_add_test(allocator.oom COMMAND test_allocator oom
  ENV XDEV_BACKEND=cpu XDEV_CPU_MEMORY=64M)
xdev_add_test(allocator.nocache COMMAND test_allocator nocache
  ENV ${ALLOC_ENV} XDEV_NO_MEMORY_CACHING=1 LABELS conformance)
xdev_add_test(allocator.conf COMMAND test_allocator conf
  ENV ${CONF} XDEV_CPU_MEMORY=512M
  "XDEV_ALLOC_CONF=max_split_size_mb:32,roundup_power2_divisions:4" LABELS conformance)
xdev_add_test(allocator.async COMMAND test_allocator async
  ENV ${CONF} XDEV_ALLOC_CONF=backend:async LABELS conformance)
xdev_add_test(allocator.pinned COMMAND test_allocator pinned ENV ${CONF} LABELS conformance)
xdev_add_test(allocator.pinned_cap COMMAND test_allocator pinned_cap
  ENV ${CONF} XDEV_ALLOC_CONF=pinned_max_cached_mb:1 LABELS conformance)
xdev_add_test(allocator.stress COMMAND test_allocator stress
  ENV ${CONF} XDEV_CPU_DEVICES=2 LABELS multi-device conformance)

# The XDEV_ALLOC_CONF parser, linked in directly (it is internal).
add_executable(test_alloc_config test_alloc_config.c ${PROJECT_SOURCE_DIR}/core/memory/alloc_config.c)
target_include_directories(test_alloc_config PRIVATE ${PROJECT_SOURCE_DIR}/core)
target_link_libraries(test_alloc_config PRIVATE xdev_test_common m)
xdev_target_warnings(test_alloc_config)
xdev_add_test(alloc_config.parser COMMAND test_alloc_config parser)
xdev_add_test(alloc_config.env_bad COMMAND test_alloc_config env_bad
  ENV XDEV_BACKEND=cpu "XDEV_ALLOC_CONF=max_split_size_mb:8,bogus:1")

# libFuzzer target for the parser: clang only (-DXDEV_BUILD_FUZZ=ON); .ci/run
# builds it and runs it for a short while.
option(XDEV_BUILD_FUZZ "Build the libFuzzer targets (clang)" OFF)
if(XDEV_BUILD_FUZZ)
  add_executable(fuzz_alloc_conf fuzz/fuzz_alloc_conf.c ${PROJECT_SOURCE_DIR}/core/memory/alloc_config.c)
  target_include_directories(fuzz_alloc_conf PRIVATE ${PROJECT_SOURCE_DIR}/core)
  target_compile_options(fuzz_alloc_conf PRIVATE -fsanitize=fuzzer,address,undefined)
  target_link_options(fuzz_alloc_conf PRIVATE -fsanitize=fuzzer,address,undefined)
  xdev_target_warnings(fuzz_alloc_conf)
  add_test(NAME fuzz.alloc_conf
    COMMAND fuzz_alloc_conf -max_total_time=20 -max_len=256 -timeout=5
      ${CMAKE_CURRENT_BINARY_DIR}/fuzz-corpus)
  file(COPY ${CMAKE_CURRENT_LIST_DIR}/fuzz/corpus/ DESTINATION ${CMAKE_CURRENT_BINARY_DIR}/fuzz-corpus)
  set_tests_properties(fuzz.alloc_conf PROPERTIES LABELS fuzz TIMEOUT 120)
endif()
