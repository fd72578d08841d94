# SPDX-License-Identifier: Apache-2.0
# embed_file.cmake - turns a text file into a C source defining
# `const char <NAME>[]` (the bytes and a terminating NUL), so that the
# library carries its page templates without a runtime file lookup.
# Usage: cmake -DIN=<file> -DOUT=<file.c> -DNAME=<symbol> -P embed_file.cmake
file(READ "${IN}" hex HEX)
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
if(bytes MATCHES "0x[89a-f]")
  message(FATAL_ERROR "${IN}: only ASCII may be embedded (a char array holds it)")
endif()
string(REGEX REPLACE "((0x..,){24})" "\\1\n" bytes "${bytes}")
get_filename_component(src "${IN}" NAME)
file(WRITE "${OUT}.tmp"
  "/* Generated from ${src} by cmake/embed_file.cmake: do not edit. */\n"
  "extern const char ${NAME}[];\n"
  "const char ${NAME}[] = {\n${bytes}0x00};\n")
file(RENAME "${OUT}.tmp" "${OUT}")
