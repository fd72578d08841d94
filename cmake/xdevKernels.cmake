# SPDX-License-Identifier: Apache-2.0
# xdevKernels.cmake - build kernel files (xdev/kernel_lang.h) for every
# toolchain found and embed them (docs/kernels-cmake.md):
#
#   xdev_add_kernels(<target> NAME <bundle> SOURCES <k.c>...
#                    [CUDA_ARCHS 80 90 ...] [HIP_ARCHS gfx90a ...] [NO_CUDA] [NO_HIP]
#                    [INCLUDE_DIRECTORIES <dir>...] [DEFINITIONS <NAME[=value]>...])
#     compiles each file into <target> with the host C compiler (optimised in
#     every build type: the CPU device runs this code), with nvcc into a
#     fatbin and with hipcc into a code object where they are found, and
#     generates <bundle>.h declaring `const xdev_kernel_bundle_t
#     *<bundle>_bundle(void)`: the kernels' host signatures (the CPU
#     backend's code) and the embedded device binaries as its images.
#   xdev_add_kernel_library(<name> SOURCES <k.c>... [INCLUDE_DIRECTORIES ...] [DEFINITIONS ...])
#     a shared library of host kernels exporting xdev_kernel_table and
#     xdev_kernel_table_size (XDEV_IMAGE_HOST_LIBRARY).
#
# Settings (cache): XDEV_KERNELS_CUDA / XDEV_KERNELS_HIP (ON: use nvcc /
# hipcc where found), XDEV_KERNELS_CUDA_ARCHS / XDEV_KERNELS_HIP_ARCHS (the
# defaults for calls without CUDA_ARCHS / HIP_ARCHS), XDEV_NVCC / XDEV_HIPCC
# (the compilers found); variables XDEV_KERNELS_NVCC_FLAGS /
# XDEV_KERNELS_HIPCC_FLAGS add flags to every device compilation.
#
# Installed with xdev's CMake package (find_package(xdev) includes it) and
# included by xdev's own top-level CMakeLists. The same file is also the
# build-time script (cmake -P, XDEV_KERNELS_STEP = embed | generate), so the
# package carries one file and the build steps can never disagree with the
# configure-time scan.

cmake_policy(VERSION 3.20...3.25) # DEPFILE (CMP0116), file(CONFIGURE), TARGET_DIRECTORY

# ---------------------------------------------------------------- kernel scan
# Strips C comments (earliest of /* and // first, so neither hides the other's
# end) and preprocessor lines, then returns the names of XDEV_KERNEL(name, ...)
# XDEV_KERNEL_SYNC(name, ...) and XDEV_KERNEL_BLOCK(name, ...) declarations in
# `out`. C's `;` is replaced
# first: CMake would take it for a list separator.
function(_xdev_kernels_scan file out)
  file(READ "${file}" text)
  string(REPLACE ";" " " text "${text}")
  string(REPLACE "\r" "" text "${text}")
  set(kept "")
  while(TRUE)
    string(FIND "${text}" "/*" block)
    string(FIND "${text}" "//" line)
    if(block EQUAL -1 AND line EQUAL -1)
      break()
    endif()
    if(line EQUAL -1 OR (NOT block EQUAL -1 AND block LESS line))
      set(at ${block})
      set(close "*/")
    else()
      set(at ${line})
      set(close "\n")
    endif()
    string(SUBSTRING "${text}" 0 ${at} head)
    string(APPEND kept "${head} ")
    math(EXPR at "${at} + 2")
    string(SUBSTRING "${text}" ${at} -1 text)
    string(FIND "${text}" "${close}" end)
    if(end EQUAL -1)
      set(text "")
      break()
    endif()
    string(LENGTH "${close}" len)
    math(EXPR end "${end} + ${len}")
    string(SUBSTRING "${text}" ${end} -1 text)
    if(close STREQUAL "\n")
      string(APPEND kept "\n")
    endif()
  endwhile()
  string(APPEND kept "${text}")
  string(REPLACE "\\\n" " " kept "\n${kept}")
  string(REGEX REPLACE "\n[ \t]*#[^\n]*" "\n" kept "${kept}")
  string(REGEX MATCHALL
    "[^A-Za-z0-9_]XDEV_KERNEL(_SYNC|_BLOCK)?[ \t\n]*\\([ \t\n]*[A-Za-z_][A-Za-z0-9_]*" hits "${kept}")
  set(names "")
  foreach(hit IN LISTS hits)
    string(REGEX REPLACE "^.*\\([ \t\n]*" "" name "${hit}")
    list(APPEND names ${name})
  endforeach()
  set(${out} "${names}" PARENT_SCOPE)
endfunction()

# Scans every file of `files`; fails naming both files when a kernel name
# repeats (`seen`: "name=file" entries from earlier calls on the same target)
# or when a file declares no kernel. `out`: "name=file" entries, in order.
function(_xdev_kernels_collect who files seen out)
  set(entries "")
  foreach(f IN LISTS files)
    _xdev_kernels_scan("${f}" names)
    if(NOT names)
      message(FATAL_ERROR "${who}: ${f} declares no kernel (no XDEV_KERNEL(name, ...) or "
        "XDEV_KERNEL_SYNC/_BLOCK(name, ...) outside comments and preprocessor lines)")
    endif()
    foreach(n IN LISTS names)
      foreach(e IN LISTS seen entries)
        string(REGEX REPLACE "=.*" "" en "${e}")
        if(en STREQUAL n)
          string(REGEX REPLACE "^[^=]*=" "" ef "${e}")
          if(ef STREQUAL f)
            set(where "twice in ${f}")
          else()
            set(where "in both ${ef} and ${f}")
          endif()
          message(FATAL_ERROR "${who}: kernel '${n}' is declared ${where}: "
            "kernel names are C symbols (${n}__xdev_sig) and must be unique across a target's kernel files")
        endif()
      endforeach()
      list(APPEND entries "${n}=${f}")
    endforeach()
  endforeach()
  set(${out} "${entries}" PARENT_SCOPE)
endfunction()

# ---------------------------------------------------------------- build-time steps
# embed: IN (a binary) -> OUT, a C fragment defining `static const uint64_t
# SYMBOL[]` (little-endian words: 8-byte aligned, as fatbins need) and
# SYMBOL_BYTES, its size in bytes. Half a MiB converts in about 0.2 s.
if(CMAKE_SCRIPT_MODE_FILE AND XDEV_KERNELS_STEP STREQUAL "embed")
  file(READ "${IN}" hex HEX)
  string(LENGTH "${hex}" digits)
  math(EXPR bytes "${digits} / 2")
  math(EXPR pad "(16 - ${digits} % 16) % 16")
  if(digits EQUAL 0)
    set(pad 16)
  endif()
  string(REPEAT "0" ${pad} zeros)
  string(APPEND hex "${zeros}")
  string(REGEX REPLACE "(..)(..)(..)(..)(..)(..)(..)(..)" "0x\\8\\7\\6\\5\\4\\3\\2\\1u," words "${hex}")
  string(REGEX REPLACE "((0x[0-9a-f]+u,){6})" "\\1\n" words "${words}")
  string(TOUPPER "${SYMBOL}" upper)
  get_filename_component(src "${IN}" NAME)
  file(WRITE "${OUT}.tmp"
    "/* Generated from ${src} by xdevKernels.cmake: do not edit. */\n"
    "#define ${upper}_BYTES ((size_t)${bytes})\n"
    "static const uint64_t ${SYMBOL}[] = {\n${words}};\n")
  file(RENAME "${OUT}.tmp" "${OUT}")
  return()
endif()

# generate: MANIFEST (written at configure time) -> OUT, the bundle's C file
# (XK_KIND bundle) or a kernel library's exported table (XK_KIND library).
# The kernel names are scanned again here, so a kernel added to a file is
# picked up without reconfiguring.
if(CMAKE_SCRIPT_MODE_FILE AND XDEV_KERNELS_STEP STREQUAL "generate")
  include("${MANIFEST}")
  _xdev_kernels_collect("${XK_WHO}" "${XK_SOURCES}" "" entries)
  set(decls "")
  set(table "")
  list(LENGTH entries nkernels)
  foreach(e IN LISTS entries)
    string(REGEX REPLACE "=.*" "" n "${e}")
    string(REGEX REPLACE "^[^=]*=" "" f "${e}")
    get_filename_component(f "${f}" NAME)
    string(APPEND decls "extern const xdev_kernel_sig_t ${n}__xdev_sig;\n")
    string(APPEND table "    &${n}__xdev_sig, /* ${f} */\n")
  endforeach()
  set(head "/* Generated by xdevKernels.cmake (${XK_WHO}): do not edit. */\n")
  string(CONCAT export "#if defined(__GNUC__)\n#define XDEV_KGEN_EXPORT __attribute__((visibility(\"default\")))\n"
    "#else\n#define XDEV_KGEN_EXPORT\n#endif\n")
  if(XK_KIND STREQUAL "library")
    file(WRITE "${OUT}.tmp" "${head}#include \"xdev/kernel_abi.h\"\n\n${export}\n${decls}\n"
      "XDEV_KGEN_EXPORT extern const xdev_kernel_sig_t *const xdev_kernel_table[];\n"
      "XDEV_KGEN_EXPORT extern const int xdev_kernel_table_size;\n"
      "const xdev_kernel_sig_t *const xdev_kernel_table[] = {\n${table}};\n"
      "const int xdev_kernel_table_size = ${nkernels};\n")
  else()
    # The host table is the bundle's `kernels` itself (xdev_module_load
    # offers it to host backends); `images` holds the device binaries only.
    set(incs "")
    set(images "")
    set(nimages 0)
    foreach(img IN LISTS XK_IMAGES)
      string(REPLACE "|" ";" img "${img}")
      list(GET img 0 format)
      list(GET img 1 sym)
      list(GET img 2 inc)
      list(GET img 3 what)
      string(TOUPPER "${sym}" upper)
      string(APPEND incs "#include \"${inc}\"\n")
      string(APPEND images
        "    {.format = XDEV_IMAGE_${format}, .data = ${sym}, .size = ${upper}_BYTES}, /* ${what} */\n")
      math(EXPR nimages "${nimages} + 1")
    endforeach()
    if(nimages EQUAL 0) # no device toolchain: host kernels only
      set(image_array "")
      set(image_ref NULL)
    else()
      set(image_array "static const xdev_kernel_image_t xdev_kgen_images[] = {\n${images}};\n\n")
      set(image_ref xdev_kgen_images)
    endif()
    file(WRITE "${OUT}.tmp" "${head}#include <stddef.h>\n#include <stdint.h>\n\n"
      "#include \"xdev/kernel.h\"\n#include \"${XK_HEADER}\"\n\n"
      "#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__\n"
      "#error \"xdev_add_kernels embeds images as little-endian 64-bit words\"\n#endif\n\n"
      "${export}\n${decls}\n"
      "static const xdev_kernel_sig_t *const xdev_kgen_kernels[] = {\n${table}};\n\n${incs}\n"
      "${image_array}"
      "static const xdev_kernel_bundle_t xdev_kgen_bundle = {\n"
      "    .size = sizeof(xdev_kernel_bundle_t),\n    .name = \"${XK_NAME}\",\n"
      "    .kernels = xdev_kgen_kernels,\n    .nkernels = ${nkernels},\n"
      "    .images = ${image_ref},\n    .nimages = ${nimages},\n};\n\n"
      "XDEV_KGEN_EXPORT const xdev_kernel_bundle_t *${XK_NAME}_bundle(void) {\n"
      "    return &xdev_kgen_bundle;\n}\n")
  endif()
  file(RENAME "${OUT}.tmp" "${OUT}")
  return()
endif()
if(CMAKE_SCRIPT_MODE_FILE)
  message(FATAL_ERROR "xdevKernels.cmake: XDEV_KERNELS_STEP must be 'embed' or 'generate'")
endif()

# ---------------------------------------------------------------- settings
option(XDEV_KERNELS_CUDA "xdev_add_kernels: build CUDA images (fatbins) where nvcc is found" ON)
option(XDEV_KERNELS_HIP "xdev_add_kernels: build HIP code objects where hipcc is found" ON)
set(XDEV_KERNELS_CUDA_ARCHS "80;90" CACHE STRING
  "xdev_add_kernels: default CUDA architectures (SASS for each, PTX for the highest)")
set(XDEV_KERNELS_HIP_ARCHS "gfx906;gfx908;gfx90a;gfx942;gfx1030;gfx1100" CACHE STRING
  "xdev_add_kernels: default AMD targets (those hipcc refuses are dropped)")

# Says which architectures a compiler refused, once per configure run rather
# than at every call.
function(_xdev_kernels_note what dropped)
  if(NOT dropped)
    return()
  endif()
  list(JOIN dropped " " dropped)
  string(REGEX REPLACE "^[^:]*: " "" key "${what} ${dropped}")
  string(MD5 key "${key}")
  get_property(said GLOBAL PROPERTY _XDEV_KERNELS_SAID_${key})
  if(NOT said)
    set_property(GLOBAL PROPERTY _XDEV_KERNELS_SAID_${key} TRUE)
    message(STATUS "${what} ${dropped}: dropped")
  endif()
endfunction()

# The CUDA compiler: the project's own if it enabled CUDA with nvcc, else nvcc
# on the path or in the usual toolkit places. Empty when there is none.
function(_xdev_kernels_nvcc out)
  get_property(langs GLOBAL PROPERTY ENABLED_LANGUAGES)
  if("CUDA" IN_LIST langs AND CMAKE_CUDA_COMPILER_ID STREQUAL "NVIDIA")
    set(${out} "${CMAKE_CUDA_COMPILER}" PARENT_SCOPE)
    return()
  endif()
  set(hints "")
  if(CUDAToolkit_BIN_DIR)
    list(APPEND hints "${CUDAToolkit_BIN_DIR}")
  endif()
  if(DEFINED ENV{CUDA_PATH})
    list(APPEND hints "$ENV{CUDA_PATH}/bin")
  endif()
  find_program(XDEV_NVCC nvcc HINTS ${hints} PATHS /usr/local/cuda/bin /opt/cuda/bin
    DOC "nvcc for xdev_add_kernels' CUDA images")
  if(XDEV_NVCC)
    set(${out} "${XDEV_NVCC}" PARENT_SCOPE)
  else()
    set(${out} "" PARENT_SCOPE)
  endif()
endfunction()

# nvcc -gencode flags for `archs` (e.g. 80 90 90a): SASS for each one nvcc
# supports (--list-gpu-code, asked once per nvcc and cached), PTX for the
# highest plain one so newer GPUs can JIT it. `desc`: "sm_80 sm_90 compute_90".
function(_xdev_kernels_cuda_flags who nvcc archs out_flags out_desc)
  string(MD5 key "${nvcc}")
  if(NOT DEFINED _XDEV_KERNELS_NVCC_CODES_${key})
    execute_process(COMMAND "${nvcc}" --list-gpu-code OUTPUT_VARIABLE codes ERROR_QUIET
      RESULT_VARIABLE rc)
    if(NOT rc EQUAL 0)
      set(codes "unknown") # an nvcc too old to say: keep every architecture
    endif()
    string(REGEX REPLACE "[ \t\r\n]+" ";" codes "${codes}")
    set(_XDEV_KERNELS_NVCC_CODES_${key} "${codes}" CACHE INTERNAL "")
  endif()
  set(codes "${_XDEV_KERNELS_NVCC_CODES_${key}}")
  set(flags "")
  set(desc "")
  set(dropped "")
  set(ptx "")
  foreach(arch IN LISTS archs)
    if(NOT arch MATCHES "^([0-9]+)([af]?)$")
      message(FATAL_ERROR "${who}: CUDA_ARCHS entry '${arch}' is not a compute capability like 80, 90 or 90a")
    endif()
    set(num "${CMAKE_MATCH_1}")
    set(suffix "${CMAKE_MATCH_2}") # unset, not empty, when the group matched nothing
    if(NOT codes STREQUAL "unknown" AND NOT "sm_${num}" IN_LIST codes)
      list(APPEND dropped ${arch})
      continue()
    endif()
    list(APPEND flags "-gencode=arch=compute_${arch},code=sm_${arch}")
    list(APPEND desc "sm_${arch}")
    if(suffix STREQUAL "" AND (ptx STREQUAL "" OR num GREATER ptx))
      set(ptx ${num})
    endif()
  endforeach()
  _xdev_kernels_note("${who}: ${nvcc} does not support CUDA architecture(s)" "${dropped}")
  if(NOT ptx STREQUAL "")
    list(APPEND flags "-gencode=arch=compute_${ptx},code=compute_${ptx}")
    list(APPEND desc "compute_${ptx}")
  endif()
  list(JOIN desc " " desc)
  set(${out_flags} "${flags}" PARENT_SCOPE)
  set(${out_desc} "${desc}" PARENT_SCOPE)
endfunction()

# --offload-arch flags for the `archs` hipcc accepts: each is tried once per
# hipcc on a one-line kernel (cached), since ROCm versions differ in the
# targets they know (Debian's 5.2 refuses gfx942 and gfx1100: its clang 15
# does not know gfx942, and has no device library for gfx1100). hipcc's
# clang leaves an empty <name>-XXXXXX directory in TMPDIR after each
# compilation: the probes and the build rules give it one under the build
# tree, removed after the call.
function(_xdev_kernels_hip_flags who hipcc archs out_flags out_desc)
  string(MD5 key "${hipcc}")
  set(probe "${CMAKE_BINARY_DIR}/CMakeFiles/xdev_kernels_probe.hip")
  set(probe_tmp "${CMAKE_BINARY_DIR}/CMakeFiles/xdev_kernels_probe.tmp")
  set(flags "")
  set(kept "")
  set(dropped "")
  foreach(arch IN LISTS archs)
    if(NOT arch MATCHES "^gfx[0-9a-f]+(:[a-z]+[+-])*$")
      message(FATAL_ERROR "${who}: HIP_ARCHS entry '${arch}' is not an AMD target like gfx90a")
    endif()
    string(MAKE_C_IDENTIFIER "${arch}" id)
    if(NOT DEFINED _XDEV_KERNELS_HIP_${key}_${id})
      if(NOT EXISTS "${probe}")
        file(WRITE "${probe}" "#include <hip/hip_runtime.h>\nextern \"C\" __global__ void k(int *p) { *p = 1; }\n")
      endif()
      file(MAKE_DIRECTORY "${probe_tmp}")
      execute_process(COMMAND "${CMAKE_COMMAND}" -E env "TMPDIR=${probe_tmp}"
          "${hipcc}" --genco -x hip --offload-arch=${arch} "${probe}"
          -o "${CMAKE_BINARY_DIR}/CMakeFiles/xdev_kernels_probe.co"
        RESULT_VARIABLE rc OUTPUT_QUIET ERROR_QUIET)
      file(REMOVE_RECURSE "${probe_tmp}")
      if(rc EQUAL 0)
        set(ok ON)
      else()
        set(ok OFF)
      endif()
      set(_XDEV_KERNELS_HIP_${key}_${id} ${ok} CACHE INTERNAL "")
    endif()
    if(_XDEV_KERNELS_HIP_${key}_${id})
      list(APPEND flags "--offload-arch=${arch}")
      list(APPEND kept ${arch})
    else()
      list(APPEND dropped ${arch})
    endif()
  endforeach()
  _xdev_kernels_note("${who}: ${hipcc} does not support AMD target(s)" "${dropped}")
  list(JOIN kept " " kept)
  set(${out_flags} "${flags}" PARENT_SCOPE)
  set(${out_desc} "${kept}" PARENT_SCOPE)
endfunction()

# Argument checks shared by both functions; `prefix`_SOURCES made absolute.
function(_xdev_kernels_sources who prefix)
  if(NOT ${prefix}_SOURCES)
    message(FATAL_ERROR "${who}: no SOURCES")
  endif()
  if(NOT TARGET xdev::xdev)
    message(FATAL_ERROR "${who}: no target xdev::xdev (call find_package(xdev) first)")
  endif()
  get_property(langs GLOBAL PROPERTY ENABLED_LANGUAGES)
  if(NOT "C" IN_LIST langs)
    message(FATAL_ERROR "${who}: kernel files are C: enable the C language (project(... LANGUAGES C))")
  endif()
  set(abs "")
  foreach(f IN LISTS ${prefix}_SOURCES)
    get_filename_component(f "${f}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_SOURCE_DIR}")
    if(NOT EXISTS "${f}")
      message(FATAL_ERROR "${who}: kernel file ${f} not found")
    endif()
    if(f IN_LIST abs)
      message(FATAL_ERROR "${who}: kernel file ${f} is listed twice")
    endif()
    list(APPEND abs "${f}")
  endforeach()
  set(${prefix}_SOURCES "${abs}" PARENT_SCOPE)
endfunction()

# Appends to a source file's property the values it lacks: source properties
# belong to the directory, so a file built into two targets (a bundle and a
# kernel library) would otherwise get every flag twice.
function(_xdev_kernels_source_add target src prop)
  get_property(have SOURCE "${src}" TARGET_DIRECTORY ${target} PROPERTY ${prop})
  foreach(v IN LISTS ARGN)
    if(NOT v IN_LIST have)
      set_property(SOURCE "${src}" TARGET_DIRECTORY ${target} APPEND PROPERTY ${prop} "${v}")
      list(APPEND have "${v}")
    endif()
  endforeach()
endfunction()

# The host compilation of kernel files inside `target`: xdev's headers and
# the caller's directories and definitions, and -O3 in every build type (the
# CPU device runs this code; a Debug build's -O0 would make it a different
# device). -fno-math-errno: kernels never read errno (GPUs have none), and it
# lets sqrtf and friends vectorise.
function(_xdev_kernels_host target sources incs defs)
  set(abs_incs "")
  foreach(d IN LISTS incs)
    get_filename_component(d "${d}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_SOURCE_DIR}")
    list(APPEND abs_incs "${d}")
  endforeach()
  set(gnu "$<C_COMPILER_ID:GNU,Clang,AppleClang,IntelLLVM>")
  foreach(src IN LISTS sources)
    _xdev_kernels_source_add(${target} "${src}" INCLUDE_DIRECTORIES
      ${abs_incs} "$<TARGET_PROPERTY:xdev::xdev,INTERFACE_INCLUDE_DIRECTORIES>")
    _xdev_kernels_source_add(${target} "${src}" COMPILE_DEFINITIONS ${defs})
    _xdev_kernels_source_add(${target} "${src}" COMPILE_OPTIONS "$<${gnu}:-O3>"
      "$<${gnu}:-fno-math-errno>")
  endforeach()
  target_sources(${target} PRIVATE ${sources})
  # Kernels call <math.h> functions: libm (the property, not
  # target_link_libraries, so the caller's choice of signature stands).
  if(UNIX AND NOT APPLE)
    get_target_property(type ${target} TYPE)
    if(type STREQUAL "STATIC_LIBRARY" OR type STREQUAL "OBJECT_LIBRARY")
      set_property(TARGET ${target} APPEND PROPERTY INTERFACE_LINK_LIBRARIES "$<LINK_ONLY:m>")
    else()
      set_property(TARGET ${target} APPEND PROPERTY LINK_LIBRARIES m)
    endif()
  endif()
endfunction()

# The build-time generation of `out` (bundle or table) from `manifest`.
function(_xdev_kernels_generate out manifest depends comment)
  add_custom_command(OUTPUT "${out}"
    COMMAND "${CMAKE_COMMAND}" -DXDEV_KERNELS_STEP=generate "-DMANIFEST=${manifest}" "-DOUT=${out}"
            -P "${CMAKE_CURRENT_FUNCTION_LIST_FILE}"
    DEPENDS ${depends} "${manifest}" "${CMAKE_CURRENT_FUNCTION_LIST_FILE}"
    COMMENT "${comment}" VERBATIM)
endfunction()

# xdev_add_kernels(): see the top of this file. Everything a toolchain
# produces goes under <binary dir>/xdev_kernels/<target>/; the kernel names
# are checked at configure time across all the target's bundles and again,
# per bundle, each time the bundle is regenerated.
function(xdev_add_kernels target)
  cmake_parse_arguments(K "NO_CUDA;NO_HIP" "NAME"
    "SOURCES;CUDA_ARCHS;HIP_ARCHS;INCLUDE_DIRECTORIES;DEFINITIONS" ${ARGN})
  set(who "xdev_add_kernels(${target})")
  if(K_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "${who}: unexpected arguments ${K_UNPARSED_ARGUMENTS}")
  endif()
  if(NOT TARGET ${target})
    message(FATAL_ERROR "${who}: no such target")
  endif()
  get_target_property(tdir ${target} SOURCE_DIR)
  get_target_property(aliased ${target} ALIASED_TARGET)
  get_target_property(imported ${target} IMPORTED)
  if(aliased OR imported OR NOT tdir STREQUAL CMAKE_CURRENT_SOURCE_DIR)
    message(FATAL_ERROR "${who}: call it in the directory that creates the target (${tdir}), "
      "on the target itself: its build steps attach to that directory")
  endif()
  if(NOT K_NAME MATCHES "^[A-Za-z_][A-Za-z0-9_]*$")
    message(FATAL_ERROR "${who}: NAME '${K_NAME}' is not a C identifier (the bundle is ${K_NAME}_bundle())")
  endif()
  get_target_property(bundles ${target} XDEV_KERNEL_BUNDLES)
  if(bundles AND K_NAME IN_LIST bundles)
    message(FATAL_ERROR "${who}: bundle ${K_NAME} is already defined for this target")
  endif()
  set_property(TARGET ${target} APPEND PROPERTY XDEV_KERNEL_BUNDLES ${K_NAME})
  _xdev_kernels_sources("${who}" K)
  # Configure-time duplicate check, across every bundle of the target.
  get_target_property(seen ${target} XDEV_KERNEL_NAMES)
  if(NOT seen)
    set(seen "")
  endif()
  _xdev_kernels_collect("${who}" "${K_SOURCES}" "${seen}" entries)
  set_property(TARGET ${target} APPEND PROPERTY XDEV_KERNEL_NAMES ${entries})

  set(base "${CMAKE_CURRENT_BINARY_DIR}/xdev_kernels/${target}")
  set(dir "${base}/${K_NAME}")
  set(incdir "${base}/include")
  set(xdev_incs "$<FILTER:$<TARGET_PROPERTY:xdev::xdev,INTERFACE_INCLUDE_DIRECTORIES>,INCLUDE,.>")
  set(dev_flags "-I$<JOIN:${xdev_incs},$<SEMICOLON>-I>")
  foreach(d IN LISTS K_INCLUDE_DIRECTORIES)
    get_filename_component(d "${d}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_SOURCE_DIR}")
    list(APPEND dev_flags "-I${d}")
  endforeach()
  foreach(d IN LISTS K_DEFINITIONS)
    list(APPEND dev_flags "-D${d}")
  endforeach()

  # Toolchains: each found, enabled (XDEV_KERNELS_CUDA / _HIP) and not
  # refused by the call gives one image per kernel file.
  set(toolchains "")
  if(NOT K_NO_CUDA AND XDEV_KERNELS_CUDA)
    _xdev_kernels_nvcc(nvcc)
    if(nvcc)
      if(NOT K_CUDA_ARCHS)
        set(K_CUDA_ARCHS ${XDEV_KERNELS_CUDA_ARCHS})
      endif()
      _xdev_kernels_cuda_flags("${who}" "${nvcc}" "${K_CUDA_ARCHS}" cuda_flags cuda_desc)
      if(cuda_flags)
        list(APPEND toolchains cuda)
      endif()
    else()
      message(STATUS "${who}: no nvcc found: ${K_NAME} has no CUDA images")
    endif()
  endif()
  if(NOT K_NO_HIP AND XDEV_KERNELS_HIP)
    find_program(XDEV_HIPCC hipcc PATHS /opt/rocm/bin DOC "hipcc for xdev_add_kernels' HIP images")
    if(XDEV_HIPCC)
      if(NOT K_HIP_ARCHS)
        set(K_HIP_ARCHS ${XDEV_KERNELS_HIP_ARCHS})
      endif()
      _xdev_kernels_hip_flags("${who}" "${XDEV_HIPCC}" "${K_HIP_ARCHS}" hip_flags hip_desc)
      if(hip_flags)
        list(APPEND toolchains hip)
      endif()
    else()
      message(STATUS "${who}: no hipcc found: ${K_NAME} has no HIP images")
    endif()
  endif()
  set(werror "")
  set(hip_werror "")
  if(XDEV_WERROR) # xdev's own build: its kernels compile warning-free everywhere
    set(werror -Werror=all-warnings)
    set(hip_werror -Werror)
  endif()

  # One image per kernel file and toolchain: compiled, then embedded.
  set(images "")
  set(incs "")
  set(i 0)
  foreach(src IN LISTS K_SOURCES)
    get_filename_component(stem "${src}" NAME_WE)
    get_filename_component(fname "${src}" NAME)
    foreach(tc IN LISTS toolchains)
      set(sym "xdev_kimg_${i}")
      if(tc STREQUAL "cuda")
        set(bin "${dir}/${i}_${stem}.fatbin")
        set(format FATBIN)
        set(what "${fname}: nvcc ${cuda_desc}")
        set(cmd "${nvcc}" -fatbin -x cu -std=c++17 ${cuda_flags} ${werror} ${XDEV_KERNELS_NVCC_FLAGS})
        if(CMAKE_CUDA_HOST_COMPILER)
          list(APPEND cmd -ccbin "${CMAKE_CUDA_HOST_COMPILER}")
        endif()
      else()
        set(bin "${dir}/${i}_${stem}.hipco")
        set(format HIP_CODE)
        set(what "${fname}: hipcc ${hip_desc}")
        set(cmd "${CMAKE_COMMAND}" -E env "TMPDIR=${bin}.tmp" "${XDEV_HIPCC}" --genco -x hip
          -std=c++17 -O3 ${hip_flags} ${hip_werror} ${XDEV_KERNELS_HIPCC_FLAGS})
      endif()
      # <bin>.tmp: hipcc's TMPDIR (_xdev_kernels_hip_flags), made before, removed after
      add_custom_command(OUTPUT "${bin}"
        COMMAND "${CMAKE_COMMAND}" -E make_directory "${bin}.tmp"
        COMMAND ${cmd} ${dev_flags} -MD -MF "${bin}.d" -MT "${bin}" -o "${bin}" "${src}"
        COMMAND "${CMAKE_COMMAND}" -E rm -rf "${bin}.tmp"
        DEPENDS "${src}" DEPFILE "${bin}.d"
        COMMENT "${who}: ${what}" COMMAND_EXPAND_LISTS VERBATIM)
      set(inc "${dir}/${i}_${stem}.${tc}.inc")
      add_custom_command(OUTPUT "${inc}"
        COMMAND "${CMAKE_COMMAND}" -DXDEV_KERNELS_STEP=embed "-DIN=${bin}" "-DOUT=${inc}"
                -DSYMBOL=${sym} -P "${CMAKE_CURRENT_FUNCTION_LIST_FILE}"
        DEPENDS "${bin}" "${CMAKE_CURRENT_FUNCTION_LIST_FILE}"
        COMMENT "${who}: embedding ${i}_${stem}.${tc}" VERBATIM)
      list(APPEND images "${format}|${sym}|${K_NAME}/${i}_${stem}.${tc}.inc|${what}")
      list(APPEND incs "${inc}")
      math(EXPR i "${i} + 1")
    endforeach()
  endforeach()

  # <bundle>.h now (it never changes with the kernels); <bundle>.c at build
  # time from the manifest, rescanning the files.
  string(TOUPPER "${K_NAME}" guard)
  set(built "host")
  if(cuda_desc AND "cuda" IN_LIST toolchains)
    string(APPEND built ", cuda (${cuda_desc})")
  endif()
  if(hip_desc AND "hip" IN_LIST toolchains)
    string(APPEND built ", hip (${hip_desc})")
  endif()
  file(CONFIGURE OUTPUT "${incdir}/${K_NAME}.h" @ONLY CONTENT
"/* Generated by xdev_add_kernels(${target} NAME ${K_NAME}): do not edit.
 * Images: ${built}. */
#ifndef XDEV_KERNELS_${guard}_H
#define XDEV_KERNELS_${guard}_H

#include \"xdev/kernel.h\"

#ifdef __cplusplus
extern \"C\" {
#endif

/* The kernels of bundle ${K_NAME}, for xdev_module_load(). */
const xdev_kernel_bundle_t *${K_NAME}_bundle(void);

#ifdef __cplusplus
}
#endif
#endif
")
  set(manifest "${dir}/manifest.cmake")
  file(CONFIGURE OUTPUT "${manifest}" @ONLY CONTENT
"set(XK_WHO [==[${who}]==])
set(XK_KIND bundle)
set(XK_NAME ${K_NAME})
set(XK_HEADER ${K_NAME}.h)
set(XK_SOURCES [==[${K_SOURCES}]==])
set(XK_IMAGES [==[${images}]==])
")
  set(bundle_c "${base}/${K_NAME}.c")
  _xdev_kernels_generate("${bundle_c}" "${manifest}" "${K_SOURCES};${incs}"
    "${who}: generating bundle ${K_NAME}")
  _xdev_kernels_host(${target} "${K_SOURCES}" "${K_INCLUDE_DIRECTORIES}" "${K_DEFINITIONS}")
  set_property(SOURCE "${bundle_c}" TARGET_DIRECTORY ${target} APPEND PROPERTY
    INCLUDE_DIRECTORIES "${incdir}" "$<TARGET_PROPERTY:xdev::xdev,INTERFACE_INCLUDE_DIRECTORIES>")
  target_sources(${target} PRIVATE "${bundle_c}")
  # PUBLIC: a library's users may call <bundle>_bundle() too. The header
  # includes xdev/kernel.h: its users need xdev's headers (xdev::xdev).
  target_include_directories(${target} PUBLIC "$<BUILD_INTERFACE:${incdir}>")
  message(STATUS "${who}: bundle ${K_NAME}: ${built}")
endfunction()

# xdev_add_kernel_library(): host kernels in a shared library that xdev
# opens at run time (xdev_module_load_image with XDEV_IMAGE_HOST_LIBRARY and
# the library's path), for kernels chosen or rebuilt without relinking.
function(xdev_add_kernel_library name)
  cmake_parse_arguments(K "" "" "SOURCES;INCLUDE_DIRECTORIES;DEFINITIONS" ${ARGN})
  set(who "xdev_add_kernel_library(${name})")
  if(K_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "${who}: unexpected arguments ${K_UNPARSED_ARGUMENTS}")
  endif()
  _xdev_kernels_sources("${who}" K)
  _xdev_kernels_collect("${who}" "${K_SOURCES}" "" entries)
  set(dir "${CMAKE_CURRENT_BINARY_DIR}/xdev_kernels/${name}")
  set(manifest "${dir}/library.cmake")
  file(CONFIGURE OUTPUT "${manifest}" @ONLY CONTENT
"set(XK_WHO [==[${who}]==])
set(XK_KIND library)
set(XK_SOURCES [==[${K_SOURCES}]==])
")
  set(table_c "${dir}/xdev_kernel_table.c")
  _xdev_kernels_generate("${table_c}" "${manifest}" "${K_SOURCES}" "${who}: generating the kernel table")
  # Not linked to libxdev: host kernels only reach xdev through the context
  # the executor hands them (xdev/kernel_abi.h). Only the table is exported.
  add_library(${name} SHARED "${table_c}")
  set_target_properties(${name} PROPERTIES C_VISIBILITY_PRESET hidden)
  set_property(SOURCE "${table_c}" TARGET_DIRECTORY ${name} APPEND PROPERTY
    INCLUDE_DIRECTORIES "$<TARGET_PROPERTY:xdev::xdev,INTERFACE_INCLUDE_DIRECTORIES>")
  _xdev_kernels_host(${name} "${K_SOURCES}" "${K_INCLUDE_DIRECTORIES}" "${K_DEFINITIONS}")
endfunction()
