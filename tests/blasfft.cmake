# BLAS and FFT suites (issue 4), included from tests/CMakeLists.txt.
# Conformance entries: they run on the backend under test (${CONF}); what a
# backend lacks (a dtype, a second device) is skipped with its reason. Two
# CPU devices cover the cross-device and per-device plan-cache cases.
foreach(suite test_blas test_fft)
  xdev_add_suite(${suite})
  target_link_libraries(${suite} PRIVATE m)
endforeach()

set(BLASFFT_ENV ${CONF} XDEV_CPU_DEVICES=2)
xdev_add_test(blas COMMAND test_blas blas ENV ${BLASFFT_ENV} LABELS multi-device conformance)
xdev_add_test(blas.launch_blocking COMMAND test_blas blas
  ENV ${BLASFFT_ENV} XDEV_LAUNCH_BLOCKING=1 LABELS multi-device conformance)
xdev_add_test(blas.tf32_off COMMAND test_blas tf32_off ENV ${CONF} XDEV_ALLOW_TF32=0
  LABELS conformance)
xdev_add_test(blas.tf32_bad COMMAND test_blas tf32_bad ENV ${CONF} XDEV_ALLOW_TF32=maybe
  LABELS conformance)
xdev_add_test(fft COMMAND test_fft fft ENV ${BLASFFT_ENV} LABELS multi-device conformance)
xdev_add_test(fft.no_caching COMMAND test_fft fft
  ENV ${BLASFFT_ENV} XDEV_NO_MEMORY_CACHING=1 LABELS multi-device conformance)
