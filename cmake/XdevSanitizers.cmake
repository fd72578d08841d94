# SPDX-License-Identifier: Apache-2.0
# XDEV_SANITIZE=address gives ASan+UBSan, =thread gives TSan, for every target.
if(XDEV_SANITIZE STREQUAL "address")
  add_compile_options(-fsanitize=address,undefined -fno-sanitize-recover=undefined
    -fno-omit-frame-pointer)
  add_link_options(-fsanitize=address,undefined)
elseif(XDEV_SANITIZE STREQUAL "thread")
  add_compile_options(-fsanitize=thread -fno-omit-frame-pointer)
  add_link_options(-fsanitize=thread)
elseif(NOT XDEV_SANITIZE STREQUAL "")
  message(FATAL_ERROR "XDEV_SANITIZE must be '', 'address' or 'thread', not '${XDEV_SANITIZE}'")
endif()
