# Process life (issue 16, items 11-12): fork and exit. Included from
# tests/CMakeLists.txt. The exit cases run tests/process/exit_helper, a
# program that exits with work still queued, many times.
xdev_add_suite(test_process)
add_executable(process_exit_helper process/exit_helper.c)
target_link_libraries(process_exit_helper PRIVATE xdev::xdev Threads::Threads)
target_compile_definitions(process_exit_helper PRIVATE _GNU_SOURCE)
xdev_target_warnings(process_exit_helper)

xdev_add_test(process.fork COMMAND test_process process fork
  ENV ${CONF} XDEV_CPU_DEVICES=2 LABELS process conformance)
xdev_add_test(process.fork_fresh COMMAND test_process process fork_fresh
  ENV ${CONF} XDEV_CPU_DEVICES=2 LABELS process conformance)
xdev_add_test(process.exit COMMAND test_process process exit
  ENV XDEV_BACKEND=cpu XDEV_CPU_DEVICES=2 XT_EXIT_HELPER=$<TARGET_FILE:process_exit_helper>
  LABELS process)
