# Warning flags shared by every xdev target (CI builds with -Werror).
function(xdev_target_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wshadow -Wstrict-prototypes
    -Wmissing-prototypes -Wno-unused-parameter)
  if(XDEV_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
endfunction()
