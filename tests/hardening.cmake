# Hardening suites (issue 16, items 1-10), the bad-input suite and the
# libFuzzer targets for the environment and device-name parsers; included
# from tests/CMakeLists.txt. Each scenario is its own ctest entry because
# xdev reads its environment once per process.
xdev_add_suite(test_hardening)
xdev_add_suite(test_hardening_threads)
xdev_add_suite(test_bad_input)
xdev_add_suite(test_bad_input_math)

# Items 1-5 (caching), 1-3 again without caching, 7 on four devices.
xdev_add_test(hardening.memory COMMAND test_hardening memory
  ENV ${CONF} XDEV_CPU_DEVICES=2 LABELS hardening conformance)
xdev_add_test(hardening.memory_nocache COMMAND test_hardening nocache
  ENV ${CONF} XDEV_CPU_DEVICES=2 XDEV_NO_MEMORY_CACHING=1 LABELS hardening conformance)
xdev_add_test(hardening.cross_stream COMMAND test_hardening cross_stream
  ENV ${CONF4} LABELS hardening multi-device conformance)

# Item 6 (meant for the ASan and TSan builds), 9 and 10.
xdev_add_test(hardening.stream_destroy_races COMMAND test_hardening_threads races
  ENV ${CONF} XDEV_CPU_DEVICES=2 LABELS hardening multi-device conformance)
xdev_add_test(hardening.deadlock_empty_cache COMMAND test_hardening_threads deadlock
  ENV ${CONF} LABELS hardening conformance)
xdev_add_test(hardening.deadlock_oom COMMAND test_hardening_threads deadlock_oom
  ENV XDEV_BACKEND=cpu XDEV_CPU_MEMORY=64M LABELS hardening)
xdev_add_test(hardening.nocache_host_fn COMMAND test_hardening_threads nocache
  ENV ${CONF} XDEV_NO_MEMORY_CACHING=1 LABELS hardening conformance)

# Every public function family with bad arguments, each case in its own
# forked child (a crash fails that case only). Two CPU devices for the
# cross-device cases; no plugin path, so cuda:0 names an absent backend.
xdev_add_test(bad_input COMMAND test_bad_input bad_input
  ENV XDEV_BACKEND=cpu XDEV_CPU_DEVICES=2 XDEV_PLUGIN_PATH=/nonexistent LABELS hardening)
xdev_add_test(bad_input.math COMMAND test_bad_input_math bad_input_math
  ENV XDEV_BACKEND=cpu XDEV_CPU_DEVICES=2 XDEV_PLUGIN_PATH=/nonexistent LABELS hardening)

# libFuzzer targets for the XDEV_* environment parsers (core/base/env.c) and
# xdev_device_parse/format (core/runtime/device_name.c), linked in directly: clang
# only (-DXDEV_BUILD_FUZZ=ON, option in allocator.cmake). ctest runs each for
# 10 s; README says how to run them longer.
if(XDEV_BUILD_FUZZ)
  function(xdev_add_fuzzer name)
    add_executable(fuzz_${name} fuzz/fuzz_${name}.c ${ARGN})
    target_include_directories(fuzz_${name} PRIVATE ${PROJECT_SOURCE_DIR}/core
      ${PROJECT_SOURCE_DIR}/include)
    target_compile_definitions(fuzz_${name} PRIVATE _GNU_SOURCE)
    target_compile_options(fuzz_${name} PRIVATE -fsanitize=fuzzer,address,undefined)
    target_link_options(fuzz_${name} PRIVATE -fsanitize=fuzzer,address,undefined)
    xdev_target_warnings(fuzz_${name})
    set(corpus ${CMAKE_CURRENT_BINARY_DIR}/fuzz-corpus-${name})
    file(COPY ${CMAKE_CURRENT_LIST_DIR}/fuzz/corpus/${name}/ DESTINATION ${corpus})
    add_test(NAME fuzz.${name}
      COMMAND fuzz_${name} -max_total_time=10 -max_len=128 -timeout=5 ${corpus})
    set_tests_properties(fuzz.${name} PROPERTIES LABELS fuzz TIMEOUT 120)
  endfunction()
  xdev_add_fuzzer(env ${PROJECT_SOURCE_DIR}/core/base/env.c ${PROJECT_SOURCE_DIR}/core/base/error.c)
  # Device names come from the registered backends (backend_table.c); the
  # fuzzer registers cpu, cuda and hip itself, as libxdev does at load.
  xdev_add_fuzzer(device_name ${PROJECT_SOURCE_DIR}/core/runtime/device_name.c
    ${PROJECT_SOURCE_DIR}/core/runtime/backend_table.c ${PROJECT_SOURCE_DIR}/core/base/error.c)
endif()
