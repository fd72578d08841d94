#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# tests/docs/check_docs.sh CC ROOT INCLUDE_DIRS(colon-separated) LIB_DIR
# The documentation's C programs work: every ```c block of README.md and docs/*.md that is a
# program (it contains "main(") is compiled with CC -std=c11 -Wall -Wextra -Werror against the
# build (headers from INCLUDE_DIRS, libxdev.so from LIB_DIR); a block whose fence follows a line
# "<!-- docs-test: run -->" is also run with XDEV_BACKEND=cpu and must exit 0. Blocks without
# main (fragments) are skipped. A failure names the page and the block's first line; the exit
# status is 1 if any block failed or no program was found.
set -u
if [ $# -ne 4 ]; then
  echo "usage: check_docs.sh CC ROOT INCLUDE_DIRS LIB_DIR" >&2
  exit 2
fi
cc=$1 root=$2 incs=$3 libdir=$4

# Against a sanitized libxdev (the asan and tsan presets) the programs need the same runtime.
san=""
if command -v nm >/dev/null 2>&1; then
  syms=$(nm -D "$libdir/libxdev.so" 2>/dev/null)
  case $syms in *__asan_*) san="-fsanitize=address,undefined" ;; *__tsan_*) san="-fsanitize=thread" ;; esac
fi
inc=""
for d in $(echo "$incs" | tr ':' ' '); do inc="$inc -I$d"; done

tmp=$(mktemp -d "${TMPDIR:-/tmp}/xdev-docs.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT INT TERM

# Extract the programs: one file per block, named after the page and the block's number among
# the page's ```c blocks, and a list "file page line run" in $tmp/blocks.
for page in "$root/README.md" "$root"/docs/*.md; do
  [ -f "$page" ] || continue
  rel=${page#"$root"/}
  name=$(echo "$rel" | sed 's/\.md$//; s#[^A-Za-z0-9]#_#g')
  awk -v dir="$tmp" -v name="$name" -v rel="$rel" '
    !fence && /^```/ {
      fence = 1; lang = substr($0, 4); sub(/[ \t]+$/, "", lang)
      if (lang == "c") { n++; start = NR + 1; run = (prev ~ /^<!-- docs-test: run -->[ \t]*$/); body = "" }
      prev = $0; next
    }
    fence && /^```[ \t]*$/ {
      if (lang == "c" && body ~ /main\(/) {
        file = dir "/" name "-" n ".c"
        printf "%s", body > file
        close(file)
        print file, rel, start, run >> (dir "/blocks")
      }
      fence = 0; lang = ""; prev = $0; next
    }
    fence && lang == "c" { body = body $0 "\n" }
    { prev = $0 }
  ' "$page" || exit 1
done

compiled=0 ran=0 failed=0
if [ -f "$tmp/blocks" ]; then
  while read -r file rel line run; do
    exe=${file%.c}
    # shellcheck disable=SC2086 # $inc and $san are lists of options
    if ! out=$("$cc" -std=c11 -Wall -Wextra -Werror $san $inc "$file" -o "$exe" \
      -L"$libdir" -lxdev -Wl,-rpath,"$libdir" 2>&1); then
      printf '%s:%s: the C block starting here does not compile:\n%s\n' "$rel" "$line" "$out" >&2
      failed=$((failed + 1))
      continue
    fi
    compiled=$((compiled + 1))
    [ "$run" = 1 ] || continue
    out=$(XDEV_BACKEND=cpu "$exe" 2>&1 </dev/null)
    rc=$?
    if [ "$rc" -ne 0 ]; then
      printf '%s:%s: the C block starting here exited %s with XDEV_BACKEND=cpu:\n%s\n' \
        "$rel" "$line" "$rc" "$out" >&2
      failed=$((failed + 1))
      continue
    fi
    ran=$((ran + 1))
  done <"$tmp/blocks"
fi

echo "check_docs.sh: $compiled program(s) compiled, $ran run, $failed failed"
if [ $((compiled + failed)) -eq 0 ]; then
  echo "check_docs.sh: no C program found in README.md or docs/*.md" >&2
  exit 1
fi
[ "$failed" -eq 0 ]
