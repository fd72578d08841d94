#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# tools/mutation_check.sh - the curated mutation check (issue 51): break the library one line at
# a time, as tests/mutations.list says, and require a named test to fail each time, so a test
# that stops guarding what it is meant to guard is found by CI instead of by an audit.
#
# It copies the tree (the files git tracks or would track) to a scratch folder, configures it
# once (RelWithDebInfo without -g, warnings as errors), builds xdev and the tests the list
# names, runs those tests unchanged (they must pass: a test failing anyway would "catch"
# everything), then for each mutation: checks that its text occurs exactly once, applies it,
# rebuilds incrementally (one object and the library), runs its tests with a per-test timeout,
# requires at least one to fail, and restores the file (the next build recompiles it). A
# mutant that does not compile is an error in the list, not a catch. Nothing in build/ is
# used or touched.
#
#   tools/mutation_check.sh [--list FILE] [--only NAME] [--work DIR] [--keep] [--strict]
#                           [--table FILE]
#   --only NAME   run one entry (a regex on the names)
#   --work DIR    the scratch folder (default: a new one under $TMPDIR, removed at the end)
#   --keep        keep the scratch folder
#   --strict      entries marked "pending" must be caught too (for the merged tree)
#   --table FILE  also write the result table (Markdown) to FILE
# Exit status: 0 when every entry not pending was caught, 1 otherwise, 2 for a bad list.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
list=$root/tests/mutations.list
only=""
work=""
keep=0
strict=0
table=""
jobs=${XDEV_MUTATION_JOBS:-2}
while [ $# -gt 0 ]; do
  case $1 in
    --list) list=$(realpath "$2"); shift ;;
    --only) only=$2; shift ;;
    --work) work=$2; shift ;;
    --keep) keep=1 ;;
    --strict) strict=1 ;;
    --table) table=$(realpath -m "$2"); shift ;;
    -h | --help) sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "mutation_check: unknown argument $1 (--help)" >&2; exit 2 ;;
  esac
  shift
done

say() { printf 'mutation_check: %s\n' "$*"; }
start_s=$SECONDS

# The list, parsed and checked against the original tree, as one tab-separated line per entry:
# name, file, tests, targets, timeout, pending. The find/replace texts stay in the list and are
# read again by apply() (they may hold any character).
entries=$(python3 - "$list" "$root" "$only" <<'EOF'
import re, sys
path, root, only = sys.argv[1], sys.argv[2], sys.argv[3]
keys = ("name", "file", "find", "replace", "tests", "targets", "timeout", "pending")
blocks, cur = [], {}
for no, line in enumerate(open(path, encoding="utf-8").read().split("\n"), 1):
    if line.strip() == "":
        if cur: blocks.append(cur)
        cur = {}
        continue
    if line.startswith("#"): continue
    key, sep, value = line.partition(": ")
    if not sep or key not in keys:
        sys.exit(f"{path}:{no}: expected 'key: value' with key one of {', '.join(keys)}")
    if key in cur: sys.exit(f"{path}:{no}: '{key}' given twice in one entry")
    cur[key] = value
    cur.setdefault("line", no)
if cur: blocks.append(cur)
names, bad = set(), []
for b in blocks:
    for k in ("name", "file", "find", "replace", "tests"):
        if k not in b: sys.exit(f"{path}:{b['line']}: the entry has no '{k}'")
    if not re.fullmatch(r"[A-Za-z0-9-]+", b["name"]) or b["name"] in names:
        sys.exit(f"{path}:{b['line']}: name '{b['name']}' is not [A-Za-z0-9-]+ or not unique")
    names.add(b["name"])
    try: text = open(f"{root}/{b['file']}", encoding="utf-8").read()
    except OSError as e: bad.append(f"{b['name']}: {b['file']}: {e.strerror}"); continue
    n = text.count(b["find"])
    if n != 1:
        bad.append(f"{b['name']}: the text to replace occurs {n} times in {b['file']}, not once "
                   f"(the code changed: update {path}): {b['find']}")
if bad: sys.exit("\n".join(bad))
for b in blocks:
    if only and not re.search(only, b["name"]): continue
    print("\t".join([b["name"], b["file"], b["tests"], b.get("targets", ""),
                     b.get("timeout", "120"), b.get("pending", "")]))
EOF
) || { echo "mutation_check: $list is not usable (above)" >&2; exit 2; }
[ -n "$entries" ] || { echo "mutation_check: no entry matches '$only'" >&2; exit 2; }

if [ -z "$work" ]; then
  work=$(mktemp -d "${TMPDIR:-/tmp}/xdev-mutation.XXXXXX")
  [ "$keep" = 1 ] || trap 'rm -rf "$work"' EXIT
fi
src=$work/src
bld=$work/build
mkdir -p "$src"
say "copying the tree to $src"
if git -C "$root" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  git -C "$root" ls-files -z --cached --others --exclude-standard |
    (cd "$root" && xargs -0 sh -c 'for f; do [ -e "$f" ] && printf "%s\0" "$f"; done' sh) |
    tar -C "$root" --null -T - -cf - | tar -C "$src" -xf -
else # not a git checkout (an unpacked release): everything but the build folders
  tar -C "$root" --exclude='./build*' --exclude=./.git -cf - . | tar -C "$src" -xf -
fi
# A folder used before (--work) may hold objects built from a mutant whose file was restored
# with its old time since: the files a run changed are listed in $work/dirty, made newer here.
if [ -s "$work/dirty" ]; then
  while read -r f; do touch "$src/$f"; done <"$work/dirty"
fi

say "configuring $bld"
# No GPU plugin or device image: every mutation is in code the CPU runs, and nvcc/hipcc
# compiling CUB and the kernel images would be most of this check's time on a 2-core machine.
cmake -S "$src" -B "$bld" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  "-DCMAKE_C_FLAGS_RELWITHDEBINFO=-O2 -DNDEBUG" -DXDEV_SANITIZE= -DXDEV_WERROR=ON \
  -DXDEV_BUILD_CUDA=OFF -DXDEV_BUILD_HIP=OFF -DXDEV_KERNELS_CUDA=OFF -DXDEV_KERNELS_HIP=OFF \
  >"$work/configure.log" 2>&1 ||
  { tail -30 "$work/configure.log"; echo "mutation_check: configure failed" >&2; exit 1; }

all_targets=$(cut -f4 <<<"$entries" | tr ' ' '\n' | sort -u | tr '\n' ' ')
all_tests=$(cut -f3 <<<"$entries" | paste -sd'|')
build() { cmake --build "$bld" -j"$jobs" --target xdev $1 >"$2" 2>&1 </dev/null; }

say "building xdev $all_targets"
build "$all_targets" "$work/build.log" || { tail -40 "$work/build.log"; exit 1; }
say "the tests unchanged must pass ($(($SECONDS - start_s)) s so far)"
if ! ctest --test-dir "$bld" -R "$all_tests" --timeout 300 --output-on-failure \
  >"$work/baseline.log" 2>&1 </dev/null; then
  tail -40 "$work/baseline.log"
  echo "mutation_check: the named tests fail without any mutation; fix that first" >&2
  exit 1
fi
say "they pass ($((SECONDS - start_s)) s so far)"

# apply NAME: replace the entry's text in the copy (exactly once, as checked above).
apply() {
  python3 - "$list" "$src" "$1" <<'EOF'
import sys
path, src, name = sys.argv[1:4]
e, cur = None, {}
for line in open(path, encoding="utf-8").read().split("\n") + [""]:
    if line.strip() == "":
        if cur.get("name") == name: e = cur
        cur = {}
    elif not line.startswith("#"):
        k, _, v = line.partition(": ")
        cur[k] = v
f = f"{src}/{e['file']}"
text = open(f, encoding="utf-8").read()
assert text.count(e["find"]) == 1, f"{e['name']}: the text is not in {f} exactly once"
open(f, "w", encoding="utf-8").write(text.replace(e["find"], e["replace"]))
EOF
}

# A Markdown table cell: '|' (a regex's alternatives, a message) escaped.
cell() { printf '%s' "${1//|/\\|}"; }

rows=()
failed=0
# (fd 3: mpirun, under ctest, reads standard input)
while IFS=$'\t' read -r -u 3 name file tests targets timeout pending; do
  t0=$SECONDS
  cp -p "$src/$file" "$work/orig"
  echo "$file" >>"$work/dirty"
  apply "$name"
  log=$work/$name
  result=""
  message=""
  if ! build "$targets" "$log.build.log"; then
    result="ERROR: the mutant does not build"
    message=$(grep -m1 -E 'error' "$log.build.log" || true)
    failed=1
  else
    echo "$file" >"$work/dirty" # built: only this file differs from the tree now
    ntests=$(ctest --test-dir "$bld" -N -R "$tests" </dev/null | awk '/^Total Tests:/ {print $3}')
    if [ "${ntests:-0}" -eq 0 ]; then
      result="ERROR: '$tests' names no test"
      failed=1
    elif ctest --test-dir "$bld" -R "$tests" --timeout "$timeout" --output-on-failure \
      >"$log.test.log" 2>&1 </dev/null; then
      if [ -n "$pending" ] && [ "$strict" = 0 ]; then
        result="not caught: expected to fail until merged ($pending)"
      else
        result="NOT CAUGHT"
        failed=1
      fi
    else
      result="caught"
      [ -z "$pending" ] || result="caught (marked pending: remove the mark)"
      # The line that says why: a Check failure, else a timeout, else a FAIL or error line.
      for pattern in ':[FE]:' 'Timeout' 'FAIL|[Ee]rror|[Aa]ssert|[Aa]bort'; do
        message=$(grep -m1 -E "$pattern" "$log.test.log" || true)
        [ -z "$message" ] || break
      done
      message=${message//$src\//}
      message=$(sed -E 's/^[0-9]+: //' <<<"$message" | cut -c1-240)
    fi
  fi
  cp -p "$work/orig" "$src/$file"
  touch "$src/$file" # newer than the mutant's object: the next build recompiles it
  say "$name ($file -> $tests): $result ($((SECONDS - t0)) s)${message:+
    $message}"
  rows+=("| $(cell "$name") | \`$(cell "$file")\` | \`$(cell "$tests")\` | $(cell "$result") | $(cell "$message") |")
done 3<<<"$entries"

total=$((SECONDS - start_s))
{
  echo "| mutation | file | test | result | failure message |"
  echo "|---|---|---|---|---|"
  printf '%s\n' "${rows[@]}"
} >"$work/table.md"
[ -z "$table" ] || cp "$work/table.md" "$table"
echo
cat "$work/table.md"
echo
if [ "$failed" = 0 ]; then
  say "every mutation was caught or is pending, in $total s"
else
  say "FAILED: a mutation got through, or an entry is broken (logs: $work; --keep keeps them), $total s"
  [ "$keep" = 1 ] || say "rerun with --keep --only NAME to see the logs"
fi
exit "$failed"
