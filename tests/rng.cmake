# Random-number suite (issue 6), included from tests/CMakeLists.txt. One
# executable: the values (test_rng.c: Philox known answers, the scalar
# reference and, on GPU runs, GPU vs CPU backend bit for bit, splitting,
# statistics) and the API (test_rng_api.c). It includes xdev/support/philox.h for
# the reference. Conformance entries: they run on the backend under test.
add_executable(test_rng test_rng.c test_rng_api.c)
target_link_libraries(test_rng PRIVATE xdev_test_common m)
xdev_target_warnings(test_rng)

xdev_add_test(rng COMMAND test_rng rng ENV ${CONF} XDEV_CPU_DEVICES=2
  LABELS multi-device conformance)
xdev_add_test(rng.launch_blocking COMMAND test_rng rng
  ENV ${CONF} XDEV_CPU_DEVICES=2 XDEV_LAUNCH_BLOCKING=1 LABELS multi-device conformance)
xdev_add_test(rng.one_device COMMAND test_rng rng ENV ${CONF} XDEV_CPU_DEVICES=1
  LABELS conformance)
# The CPU backend's x86-64 baseline code (auto picks AVX2 where present): same bits.
xdev_add_test(rng.cpu_baseline COMMAND test_rng rng
  ENV XDEV_BACKEND=cpu XDEV_CPU_DEVICES=2 XDEV_CPU_RNG_ISA=baseline)
xdev_add_test(rng.cpu_isa_bad COMMAND test_rng isa_bad ENV XDEV_BACKEND=cpu XDEV_CPU_RNG_ISA=avx9)
