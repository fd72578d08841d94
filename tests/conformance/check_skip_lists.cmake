# SPDX-License-Identifier: Apache-2.0
# check_skip_lists.cmake - fails when a backend's conformance.skip is stale.
#
#   cmake -DSOURCES=<tests/conformance> "-DSKIP_LISTS=<a.skip;b.skip>" -P check_skip_lists.cmake
#
# Each entry is "<suite>.<test>[/<part>]  <reason>" or "<suite>.*  <reason>"
# (tests/common/xt.h). The
# entry must name a suite some conformance source creates (suite_create), a
# START_TEST of that same source and, with /<part>, a part that source asks
# about (xt_unsupported(__func__, "<part>")); and it must give a reason. A
# skip nobody can match would hide nothing today and something tomorrow.
file(GLOB sources ${SOURCES}/*.c)
set(errors 0)
foreach(list IN LISTS SKIP_LISTS)
  file(STRINGS ${list} lines)
  set(n 0)
  foreach(line IN LISTS lines)
    math(EXPR n "${n} + 1")
    string(STRIP "${line}" line)
    if(line STREQUAL "" OR line MATCHES "^#")
      continue()
    endif()
    if(NOT line MATCHES "^([A-Za-z0-9_]+)\\.([A-Za-z0-9_]+|\\*)(/([A-Za-z0-9_]+))?[ \t]+(.+)$")
      message(SEND_ERROR
        "${list}:${n}: malformed entry (want '<suite>.<test>[/<part>]  <reason>'): ${line}")
      math(EXPR errors "${errors} + 1")
      continue()
    endif()
    set(suite ${CMAKE_MATCH_1})
    set(test ${CMAKE_MATCH_2})
    set(part "${CMAKE_MATCH_4}")
    set(found "")
    foreach(src IN LISTS sources)
      file(READ ${src} text)
      # A suite's tests may be split over companion files linked into the same
      # executable (test_rng.c creates "rng", test_rng_api.c adds tests to it).
      string(REGEX REPLACE "\\.c$" "" stem "${src}")
      file(GLOB companions ${stem}_*.c)
      foreach(c IN LISTS companions)
        file(READ ${c} more)
        string(APPEND text "${more}")
      endforeach()
      string(FIND "${text}" "suite_create(\"${suite}\")" has_suite)
      string(FIND "${text}" "START_TEST(${test})" has_test)
      if(test STREQUAL "*") # the whole suite
        set(has_test 0)
      endif()
      if(has_suite GREATER -1 AND has_test GREATER -1)
        set(found ${src})
        if(NOT part STREQUAL "")
          string(FIND "${text}" "\"${part}\"" has_part)
          if(has_part EQUAL -1)
            set(found "")
          endif()
        endif()
      endif()
    endforeach()
    if(found STREQUAL "")
      message(SEND_ERROR "${list}:${n}: stale entry: no conformance suite '${suite}' with a "
        "test '${test}'${CMAKE_MATCH_3} in ${SOURCES}: ${line}")
      math(EXPR errors "${errors} + 1")
    else()
      message(STATUS "${list}:${n}: ${suite}.${test}${CMAKE_MATCH_3} (${found})")
    endif()
  endforeach()
endforeach()
if(errors GREATER 0)
  message(FATAL_ERROR "${errors} bad skip-list entr(ies)")
endif()
