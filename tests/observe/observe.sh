#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# tests/observe/observe.sh - the observability outputs end to end, on the
# backend XDEV_BACKEND selects (ctest: cpu; tests/gpu/run.sh: cuda).
#
#   observe.sh example BIN_DIR OUT_DIR   examples/memory_view writes a snapshot, its page
#                                        and a trace; the trace passes check_trace.py; the
#                                        tool xdev-memviz makes the same page from the
#                                        snapshot file; the tool's bad input fails clearly
#   observe.sh env BIN_DIR OUT_DIR       XDEV_TRACE_FILE: device_agnostic traced without a
#                                        code change, written at exit
#   observe.sh browser BIN_DIR OUT_DIR   chromium (headless) loads the memory view and the
#                                        trace view of memory_view's output: no console
#                                        message, no script error, the snapshot's segment
#                                        count and the trace's track count drawn;
#                                        screenshots kept in OUT_DIR (memory_view.png,
#                                        trace.png); pages of JSON with wrong-typed segments,
#                                        blocks or trace args show their error, no script error
# Exit 0 pass, 1 fail, 77 skipped (the reason is printed).
set -uo pipefail
mode=$1 bin=$2 out=$3
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
mkdir -p "$out"
fail() { echo "observe.sh $mode: FAIL: $*"; exit 1; }
python=$(command -v python3 || true)

check_trace() {
  if [ -z "$python" ]; then
    echo "observe.sh $mode: trace structure not checked: no python3 here"
    return 0
  fi
  "$python" "$here/check_trace.py" "$@" || fail "check_trace.py $*"
}

case $mode in
example)
  rm -f "$out"/memory_view.*
  "$bin/examples/memory_view" --steps 6 "$out/memory_view" || fail "memory_view"
  check_trace "$out/memory_view.trace.json" --expect memcpy,fill,convert,wait_stream
  grep -q '"action":"oom"' "$out/memory_view.json" || fail "no oom entry in the snapshot"
  # The tool's page from the snapshot file is the library's page of the same snapshot.
  "$bin/tools/xdev-memviz" "$out/memory_view.json" -o "$out/tool.html" || fail "xdev-memviz"
  cmp -s "$out/tool.html" "$out/memory_view.html" || fail "xdev-memviz page differs from xdev_memory_viz_write's"
  rm -f "$out/memory_view.html"
  msg=$("$bin/tools/xdev-memviz" "$out/memory_view.json") && [ -s "$out/memory_view.html" ] ||
    fail "xdev-memviz without -o did not write memory_view.html"
  [[ $msg == *"wrote $out/memory_view.html (the memory view of"* ]] ||
    fail "xdev-memviz did not say where it wrote: '$msg'"
  msg=$("$bin/tools/xdev-memviz" --help) && [[ $msg == *"--snapshot"*"Exit status"* ]] ||
    fail "xdev-memviz --help: '$msg'"
  printf '{"segments":[1,2' > "$out/broken.json"
  msg=$("$bin/tools/xdev-memviz" "$out/broken.json" -o "$out/broken.html" 2>&1)
  [ $? -eq 1 ] && [[ $msg == *"not JSON: at byte 16"* ]] || fail "broken input: '$msg'"
  [ ! -e "$out/broken.html" ] || fail "a page was written for broken input"
  msg=$("$bin/tools/xdev-memviz" "$out/missing.json" 2>&1)
  [ $? -eq 1 ] && [[ $msg == *"cannot open"*"missing.json"* ]] || fail "missing input: '$msg'"
  "$bin/tools/xdev-memviz" > /dev/null 2>&1
  [ $? -eq 2 ] || fail "no arguments should be a usage error (2)"
  # The trace's timeline page; a snapshot is not a trace.
  "$bin/tools/xdev-memviz" --trace "$out/memory_view.trace.json" -o "$out/trace.html" ||
    fail "xdev-memviz --trace"
  grep -q 'id="xdev-trace"' "$out/trace.html" && ! grep -q '@XDEV_TRACE@' "$out/trace.html" ||
    fail "the trace page does not hold the trace"
  msg=$("$bin/tools/xdev-memviz" --trace "$out/memory_view.json" -o "$out/no.html" 2>&1)
  [ $? -eq 1 ] && [[ $msg == *"traceEvents"* ]] || fail "a snapshot given as a trace: '$msg'"
  # Without --trace a trace is told from its "traceEvents": the same timeline page.
  "$bin/tools/xdev-memviz" "$out/memory_view.trace.json" -o "$out/trace2.html" >/dev/null &&
    cmp -s "$out/trace.html" "$out/trace2.html" || fail "a trace without --trace"
  printf '{"other":[]}' > "$out/neither.json"
  msg=$("$bin/tools/xdev-memviz" "$out/neither.json" -o "$out/neither.html" 2>&1)
  [ $? -eq 1 ] && [[ $msg == *"neither a memory snapshot"*"nor a stream trace"* ]] ||
    fail "neither kind: '$msg'"
  echo "observe.sh example: OK"
  ;;
env)
  rm -f "$out/env.trace.json"
  XDEV_TRACE_FILE="$out/env.trace.json" "$bin/examples/device_agnostic" --n 4096 ||
    fail "device_agnostic with XDEV_TRACE_FILE"
  [ -s "$out/env.trace.json" ] || fail "XDEV_TRACE_FILE was not written at exit"
  check_trace "$out/env.trace.json" --expect memcpy,host_func,event_record
  msg=$(XDEV_TRACE_FILE=/nonexistent-dir/t.json "$bin/examples/device_agnostic" 2>&1)
  [ $? -ne 0 ] && [[ $msg == *"XDEV_TRACE_FILE=/nonexistent-dir/t.json"*"XDEV_ERROR_ENV"* ||
                    $msg == *"XDEV_ERROR_ENV"*"XDEV_TRACE_FILE=/nonexistent-dir/t.json"* ]] ||
    fail "a bad XDEV_TRACE_FILE: '$msg'"
  echo "observe.sh env: OK"
  ;;
browser)
  chrome=$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)
  if [ -z "$chrome" ]; then
    echo "observe.sh browser: SKIP: no chromium here (cmake/install-deps.sh installs Debian's)"
    exit 77
  fi
  "$bin/examples/memory_view" --steps 6 "$out/memory_view" > /dev/null || fail "memory_view"
  "$bin/tools/xdev-memviz" --trace "$out/memory_view.trace.json" -o "$out/trace.html" ||
    fail "xdev-memviz --trace"
  profile=$(mktemp -d)
  trap 'rm -rf "$profile"' EXIT
  flags=(--headless --no-sandbox --disable-gpu --hide-scrollbars --user-data-dir="$profile"
         --enable-logging=stderr --v=0)
  # load PAGE WANT SIZE SHOT: the page drawn with WANT in its body, quietly, then a screenshot.
  load() {
    local page=$1 want=$2 size=$3 shot=$4 body
    timeout 120 "$chrome" "${flags[@]}" --window-size="$size" --dump-dom "file://$page" \
      > "$out/dom.html" 2> "$out/chromium.log" || fail "chromium --dump-dom $page (see $out/chromium.log)"
    body=$(grep -o '<body[^>]*>' "$out/dom.html" | head -1)
    echo "observe.sh browser: $(basename "$page"): $body"
    [[ $body == *'data-state="ready"'* ]] || fail "$page did not finish drawing"
    [[ $body != *'data-error'* ]] || fail "script error in $page: $body"
    [[ $body == *"$want"* ]] || fail "$page: expected $want: $body"
    if grep -q ':CONSOLE' "$out/chromium.log"; then
      grep ':CONSOLE' "$out/chromium.log"
      fail "$page wrote to the console"
    fi
    timeout 120 "$chrome" "${flags[@]}" --window-size="$size" --screenshot="$shot" "file://$page" \
      2>> "$out/chromium.log" > /dev/null || fail "chromium --screenshot $page"
    [ -s "$shot" ] || fail "no screenshot of $page"
  }
  # refused PAGE WANT: a page whose data has the wrong shape shows its error
  # (data-state="refused", data-error naming WANT), with no script error.
  refused() {
    local page=$1 want=$2 body
    timeout 120 "$chrome" "${flags[@]}" --window-size=1000,400 --dump-dom "file://$page" \
      > "$out/dom.html" 2> "$out/chromium.log" || fail "chromium --dump-dom $page (see $out/chromium.log)"
    body=$(grep -o '<body[^>]*>' "$out/dom.html" | head -1)
    echo "observe.sh browser: $(basename "$page"): $body"
    [[ $body == *'data-state="refused"'* && $body == *"data-error=\"$want"* ]] ||
      fail "$page: expected the page's own error \"$want...\": $body"
    grep -q 'id="error"' "$out/dom.html" || fail "$page shows no error message"
    if grep -q ':CONSOLE' "$out/chromium.log"; then
      grep ':CONSOLE' "$out/chromium.log"
      fail "$page wrote to the console (a script error)"
    fi
  }
  # JSON the library accepts (a top-level "segments" / "traceEvents" array)
  # but whose elements have the wrong types.
  printf '{"segments":[1,"x"]}' > "$out/bad-types.json"
  printf '{"segments":[{"address":0,"total_size":8,"blocks":7}]}' > "$out/bad-blocks.json"
  printf '{"traceEvents":[{"ph":"C","pid":1,"ts":0,"args":5}]}' > "$out/bad-trace.json"
  "$bin/tools/xdev-memviz" "$out/bad-types.json" -o "$out/bad-types.html" &&
    "$bin/tools/xdev-memviz" "$out/bad-blocks.json" -o "$out/bad-blocks.html" &&
    "$bin/tools/xdev-memviz" --trace "$out/bad-trace.json" -o "$out/bad-trace.html" ||
    fail "xdev-memviz refused JSON of the right outline"
  refused "$out/bad-types.html" "snapshot: segments[0] is not an object"
  refused "$out/bad-blocks.html" "snapshot: segments[0].blocks is not a list"
  refused "$out/bad-trace.html" "trace: traceEvents[0].args is not an object"
  segments=$(grep -o '"total_size":' "$out/memory_view.json" | wc -l)
  tracks=$(grep -o '"thread_name"' "$out/memory_view.trace.json" | wc -l)
  load "$out/memory_view.html" "data-segments=\"$segments\"" 1400,1900 "$out/memory_view.png"
  load "$out/trace.html" "data-tracks=\"$tracks\"" 1500,420 "$out/trace.png"
  echo "observe.sh browser: OK ($segments segments, $tracks tracks drawn; screenshots in $out)"
  ;;
*)
  echo "usage: observe.sh example|env|browser BIN_DIR OUT_DIR" >&2
  exit 2
  ;;
esac
