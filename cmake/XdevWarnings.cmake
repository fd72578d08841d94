# SPDX-License-Identifier: Apache-2.0
# Warning flags shared by every xdev target; -Werror with XDEV_WERROR=ON (every preset, so CI).
function(xdev_target_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wshadow -Wstrict-prototypes
    -Wmissing-prototypes -Wno-unused-parameter)
  if(XDEV_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
endfunction()
