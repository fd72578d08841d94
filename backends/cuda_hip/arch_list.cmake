# SPDX-License-Identifier: Apache-2.0
# backends/cuda_hip/arch_list.cmake - xc_define_arch_list(<target>): the
# plugin's XC_ARCH_LIST (what xdev_get_arch_list answers, torch.cuda's
# get_arch_list names) from CMAKE_CUDA_ARCHITECTURES, for the two builds
# whose device code nvcc compiles: the CUDA plugin and the HIP plugin on
# HIP's NVIDIA platform. 80-real is sm_80, 75-virtual compute_75 (PTX),
# 90 both; all, all-major and native stay as written.
function(xc_define_arch_list target)
  set(names "")
  foreach(a IN LISTS CMAKE_CUDA_ARCHITECTURES)
    if(a MATCHES "^([0-9]+[a-z]?)-virtual$")
      list(APPEND names compute_${CMAKE_MATCH_1})
    elseif(a MATCHES "^([0-9]+[a-z]?)-real$")
      list(APPEND names sm_${CMAKE_MATCH_1})
    elseif(a MATCHES "^([0-9]+[a-z]?)$")
      list(APPEND names sm_${CMAKE_MATCH_1} compute_${CMAKE_MATCH_1})
    else()
      list(APPEND names ${a})
    endif()
  endforeach()
  list(JOIN names " " text)
  target_compile_definitions(${target} PRIVATE "XC_ARCH_LIST=\"${text}\"")
endfunction()
