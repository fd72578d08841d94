# SPDX-License-Identifier: Apache-2.0
# The null backend skeleton (backends/null) and in-process registration,
# included from tests/CMakeLists.txt. The skeleton is built a second time
# named "hip" so that it can replace the shipped hip plugin factory.
add_library(xdev-null-as-hip MODULE ${PROJECT_SOURCE_DIR}/backends/null/null_backend.c)
target_include_directories(xdev-null-as-hip PRIVATE ${PROJECT_SOURCE_DIR}/include)
target_compile_definitions(xdev-null-as-hip PRIVATE _GNU_SOURCE NULL_BACKEND_NAME="hip")
xdev_target_warnings(xdev-null-as-hip)
xdev_add_suite(test_null_backend)
target_link_libraries(test_null_backend PRIVATE ${CMAKE_DL_LIBS})
target_compile_definitions(test_null_backend PRIVATE
  XT_NULL_BACKEND="$<TARGET_FILE:xdev-null>" XT_NULL_BACKEND_AS_HIP="$<TARGET_FILE:xdev-null-as-hip>")
add_dependencies(test_null_backend xdev-null xdev-null-as-hip)
xdev_add_test(null_backend.abi COMMAND test_null_backend abi)
xdev_add_test(null_backend.register COMMAND test_null_backend register
  ENV XDEV_BACKEND=cpu)
