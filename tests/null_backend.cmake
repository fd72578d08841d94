# SPDX-License-Identifier: Apache-2.0
# The null backend skeleton (backends/null) and in-process registration,
# included from tests/CMakeLists.txt. The skeleton is built a second time
# named "hip" so that it can replace the shipped hip plugin factory.
add_library(xdev-null-as-hip MODULE ${PROJECT_SOURCE_DIR}/backends/null/null_backend.c)
target_include_directories(xdev-null-as-hip PRIVATE ${PROJECT_SOURCE_DIR}/include)
target_compile_definitions(xdev-null-as-hip PRIVATE _GNU_SOURCE NULL_BACKEND_NAME="hip")
xdev_target_warnings(xdev-null-as-hip)
# ...and a third time as "nullacc", a plugin that says it is an accelerator
# (api.flags), found by name on XDEV_PLUGIN_PATH: XDEV_VISIBLE_DEVICES applies.
add_library(xdev-nullacc MODULE ${PROJECT_SOURCE_DIR}/backends/null/null_backend.c)
target_include_directories(xdev-nullacc PRIVATE ${PROJECT_SOURCE_DIR}/include)
target_compile_definitions(xdev-nullacc PRIVATE _GNU_SOURCE NULL_BACKEND_NAME="nullacc"
  "NULL_BACKEND_FLAGS=(XDEV_BACKEND_ACCELERATOR | XDEV_BACKEND_HOST_MEMORY)")
set_target_properties(xdev-nullacc PROPERTIES PREFIX "lib" OUTPUT_NAME "xdev-nullacc"
  LIBRARY_OUTPUT_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR}/nullacc-plugin)
xdev_target_warnings(xdev-nullacc)
xdev_add_suite(test_null_backend)
target_link_libraries(test_null_backend PRIVATE ${CMAKE_DL_LIBS})
target_compile_definitions(test_null_backend PRIVATE
  XT_NULL_BACKEND="$<TARGET_FILE:xdev-null>" XT_NULL_BACKEND_AS_HIP="$<TARGET_FILE:xdev-null-as-hip>")
add_dependencies(test_null_backend xdev-null xdev-null-as-hip xdev-nullacc)
xdev_add_test(null_backend.abi COMMAND test_null_backend abi)
xdev_add_test(null_backend.register COMMAND test_null_backend register
  ENV XDEV_BACKEND=cpu)
xdev_add_test(null_backend.half_group COMMAND test_null_backend half_group
  ENV XDEV_BACKEND=cpu)
xdev_add_test(null_backend.by_name COMMAND test_null_backend by_name
  ENV XDEV_PLUGIN_PATH=${CMAKE_CURRENT_BINARY_DIR}/nullacc-plugin XDEV_BACKEND=nullacc,cpu
    NULL_BACKEND_DEVICES=4 XDEV_VISIBLE_DEVICES=3,1)
