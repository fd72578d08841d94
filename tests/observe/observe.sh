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
#                                        message, no script error, no horizontal scrolling
#                                        (1400 and 1000 px), time axis labels apart; the
#                                        snapshot's segment count, the active memory
#                                        timeline's allocations (check_memviz.py), the
#                                        summary folded, stream names where streams are;
#                                        the trace's track count, opened on its busiest
#                                        stretch, a legend naming every operation drawn;
#                                        screenshots kept in OUT_DIR (memory_view.png,
#                                        memory_view-1000.png, memory_view-zoomed.png,
#                                        trace.png, trace-all.png, trace-1000.png,
#                                        trace-zoomed.png); pages of JSON with wrong-typed
#                                        segments, blocks or trace args show their error,
#                                        no script error
#   observe.sh timebase BIN_DIR OUT_DIR  the memory view of two devices whose histories
#                                        cover different stretches (cpu:0 for 7 s, cpu:1
#                                        for 10 us inside them) draws both on one time
#                                        axis: the same "of <total> ms", cpu:1's
#                                        out-of-memory event at its place in cpu:0's run
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
timebase)
  chrome=$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)
  if [ -z "$chrome" ]; then
    echo "observe.sh timebase: SKIP: no chromium here (cmake/install-deps.sh installs Debian's)"
    exit 77
  fi
  # cpu:0 allocates at 1 s and frees at 8 s; cpu:1 allocates and frees within 10 us at 5 s.
  entry() { printf '{"action":"%s","addr":%d,"size":4096,"stream":0,"time_ns":%s}' "$@"; }
  seg() { printf '{"device":"%s","address":%d,"total_size":8192,"stream":0,"blocks":[{"address":%d,"size":8192,"state":"inactive"}]}' "$1" "$2" "$2"; }
  printf '{"segments":[%s,%s],"device_traces":[{"device":"cpu:0","entries":[%s,%s]},{"device":"cpu:1","entries":[%s,%s]}]}' \
    "$(seg cpu:0 4096)" "$(seg cpu:1 65536)" \
    "$(entry alloc 4096 1000000000)" "$(entry free_completed 4096 8000000000)" \
    "$(entry alloc 65536 5000000000)" "$(entry oom 0 5000005000),$(entry free_completed 65536 5000010000)" > "$out/two.json"
  "$bin/tools/xdev-memviz" "$out/two.json" -o "$out/two.html" > /dev/null || fail "xdev-memviz two.json"
  profile=$(mktemp -d)
  trap 'rm -rf "$profile"' EXIT
  timeout 120 "$chrome" --headless --no-sandbox --disable-gpu --user-data-dir="$profile" \
    --window-size=1400,1900 --dump-dom "file://$out/two.html" > "$out/dom.html" 2> "$out/chromium.log" ||
    fail "chromium --dump-dom $out/two.html (see $out/chromium.log)"
  grep -q 'data-state="ready"' "$out/dom.html" || fail "the page did not finish drawing"
  totals=$(grep -o 'showing [0-9.]*-[0-9.]* ms of [0-9.]* ms' "$out/dom.html")
  echo "observe.sh timebase: $(tr '\n' ';' <<< "$totals")"
  [ "$(wc -l <<< "$totals")" -eq 2 ] || fail "expected a time axis for each of the two devices: '$totals'"
  [ "$(sort -u <<< "$totals" | wc -l)" -eq 1 ] ||
    fail "the devices are drawn on different time axes: $(tr '\n' ';' <<< "$totals")"
  # cpu:1's out-of-memory event is listed at 4000.005 ms from the first entry of any device,
  # not at 0.005 ms from its own first.
  grep -q '<td class="num">4000.005 ms</td>' "$out/dom.html" ||
    fail "cpu:1's out-of-memory event is not at 4000.005 ms on the shared axis"
  echo "observe.sh timebase: OK"
  ;;
browser)
  chrome=$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)
  if [ -z "$chrome" ]; then
    echo "observe.sh browser: SKIP: no chromium here (cmake/install-deps.sh installs Debian's)"
    exit 77
  fi
  rm -f "$out"/*.png
  "$bin/examples/memory_view" --steps 6 "$out/memory_view" > /dev/null || fail "memory_view"
  "$bin/tools/xdev-memviz" --trace "$out/memory_view.trace.json" -o "$out/trace.html" ||
    fail "xdev-memviz --trace"
  profile=$(mktemp -d)
  trap 'rm -rf "$profile"' EXIT
  flags=(--headless --no-sandbox --disable-gpu --hide-scrollbars --user-data-dir="$profile"
         --enable-logging=stderr --v=0)
  attr() { sed -n "s/.* data-$1=\"\\([^\"]*\\)\".*/\\1/p" <<< "$2"; }
  # load PAGE SIZE SHOT WANT...: the page drawn (each WANT in its body), quietly, fitting
  # its window (no horizontal scrolling), its time axis labels apart; then a screenshot
  # (SHOT "-": none). PAGE may end in #HASH. The page's DOM is left in $out/dom.html.
  load() {
    local page=$1 size=$2 shot=$3 body want sw vw gap
    shift 3
    timeout 120 "$chrome" "${flags[@]}" --window-size="$size" --dump-dom "file://$page" \
      > "$out/dom.html" 2> "$out/chromium.log" || fail "chromium --dump-dom $page (see $out/chromium.log)"
    body=$(grep -o '<body[^>]*>' "$out/dom.html" | head -1)
    echo "observe.sh browser: $(basename "$page") at $size: $body"
    [[ $body == *'data-state="ready"'* ]] || fail "$page did not finish drawing"
    [[ $body != *'data-error'* ]] || fail "script error in $page: $body"
    for want in "$@"; do
      [[ $body == *"$want"* ]] || fail "$page at $size: expected $want: $body"
    done
    if grep -q ':CONSOLE' "$out/chromium.log"; then
      grep ':CONSOLE' "$out/chromium.log"
      fail "$page wrote to the console"
    fi
    sw=$(attr scroll-width "$body") vw=$(attr view-width "$body")
    [ -n "$sw" ] && [ -n "$vw" ] && [ "$sw" -le "$vw" ] && [ "$vw" -eq "${size%,*}" ] ||
      fail "$page at $size: wider than its window (scrollWidth $sw, window $vw)"
    gap=$(attr tick-gap "$body")
    [ -n "$gap" ] && [[ $gap != -* ]] || fail "$page at $size: time axis labels overlap (gap '$gap' px)"
    [ "$shot" = - ] && return 0
    timeout 120 "$chrome" "${flags[@]}" --window-size="$size" --screenshot="$shot" "file://$page" \
      2>> "$out/chromium.log" > /dev/null || fail "chromium --screenshot $page"
    [ -s "$shot" ] || fail "no screenshot of $page"
  }
  # interact PAGE SCRIPT SIZE [STREAMS]: the page with SCRIPT (interact_*.js) appended, which
  # hovers, zooms and resizes by synthetic events and says data-interact="ok" or what failed;
  # STREAMS: the stream names (comma-separated) its tooltips must show.
  interact() {
    local page=$1 script=$2 size=$3 streams=${4:-} body
    { sed '/^<\/body>$/,$d' "$page"
      printf '<script>document.body.dataset.expectStream = "%s";</script>\n<script>\n' "$streams"
      cat "$here/$script"; printf '</script>\n</body>\n</html>\n'; } > "$out/interact.html"
    timeout 120 "$chrome" "${flags[@]}" --window-size="$size" --virtual-time-budget=5000 --dump-dom \
      "file://$out/interact.html" > "$out/dom.html" 2> "$out/chromium.log" ||
      fail "chromium --dump-dom $out/interact.html ($page with $script)"
    body=$(grep -o '<body[^>]*>' "$out/dom.html" | head -1)
    echo "observe.sh browser: $(basename "$page") with $script: $(attr interact "$body")"
    [[ $body != *'data-error'* && $body == *'data-state="ready"'* ]] ||
      fail "script error in $page with $script: $body"
    [[ $body == *'data-interact="ok"'* ]] || fail "$page with $script: $(attr interact "$body")"
    if grep -q ':CONSOLE' "$out/chromium.log"; then
      grep ':CONSOLE' "$out/chromium.log"
      fail "$page with $script wrote to the console"
    fi
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

  # The memory view: segments, the active memory timeline's bands (one per allocation of
  # the history), every summary folded; at 1400 and 1000 px, and zoomed in (#t=A-B).
  snap=$out/memory_view.json
  segments=$(grep -o '"total_size":' "$snap" | wc -l)
  allocs=$(grep -o '"action":"alloc"' "$snap" | wc -l)
  [ "$allocs" -gt 0 ] || fail "no alloc entry in the snapshot's history"
  bands=("data-timeline-bands=") summaries=() stretch=0-2
  if [ -n "$python" ]; then
    bands=("data-timeline-bands=\"$("$python" "$here/check_memviz.py" bands "$snap")\"")
    summaries=("data-summary-folded=\"$("$python" "$here/check_memviz.py" summaries "$snap")\"")
    stretch=$("$python" "$here/check_memviz.py" stretch "$snap")
  fi
  page=$out/memory_view.html
  load "$page" 1400,1900 "$out/memory_view.png" "data-segments=\"$segments\"" "${bands[@]}" "${summaries[@]}"
  drawn=$(attr timeline-bands "$(grep -o '<body[^>]*>' "$out/dom.html")")
  [ "$drawn" -ge "$allocs" ] || fail "the active memory timeline drew $drawn bands, the history has $allocs allocs"
  grep -q '<details class="fold">' "$out/dom.html" && ! grep -q '<details class="fold" open' "$out/dom.html" ||
    fail "the allocator summary is not folded"
  grep -q '>Active memory timeline<' "$out/dom.html" || fail "no active memory timeline"
  # The pinned host cache's statistics (the snapshot's host_stats): a section of five rows.
  grep -q '>pinned host memory<' "$out/dom.html" && grep -q 'data-host-stats="5"' "$out/dom.html" ||
    fail "the memory view shows no pinned host memory statistics"
  load "$page" 1000,1900 "$out/memory_view-1000.png" "data-segments=\"$segments\"" "${bands[@]}"
  load "$page#t=$stretch" 1400,1100 "$out/memory_view-zoomed.png" 'data-timeline-zoomed="1"'
  # Named streams are shown by name wherever a stream is: the segment legend, the tables.
  if [ -n "$python" ]; then
    names=$("$python" "$here/check_memviz.py" name "$snap" "$out/named.json" loader compute copy side) ||
      fail "check_memviz.py name"
    "$bin/tools/xdev-memviz" "$out/named.json" -o "$out/named.html" > /dev/null || fail "xdev-memviz named.json"
    load "$out/named.html" 1400,1900 - "data-segments=\"$segments\""
    for n in $names; do
      grep -Eq "(>|stream )$n \(0x" "$out/dom.html" || fail "stream name $n not shown in the memory view"
    done
    grep -q 'allocated, stream loader (0x' "$out/dom.html" || fail "the segment legend does not name the stream"
    grep -q '<td>loader (0x' "$out/dom.html" || fail "the tables do not name the stream"
    interact "$out/named.html" interact_memory.js 1400,1900 "$(tr ' ' , <<< "$names")"
  else
    interact "$out/memory_view.html" interact_memory.js 1400,1900
  fi

  # The trace view: every track, opened on the busiest stretch, a legend of the colours of
  # every operation drawn; the whole run (#all); at 1000 px; zoomed in (#t=A-B).
  tracks=$(grep -o '"thread_name"' "$out/memory_view.trace.json" | wc -l)
  ops=$(grep -o '"name":"[a-z_]*","cat":"stream"' "$out/memory_view.trace.json" | sed 's/"name":"\([a-z_]*\)".*/\1/' | sort -u)
  [ -n "$ops" ] || fail "no stream operation in the trace"
  page=$out/trace.html
  load "$page" 1500,420 "$out/trace.png" "data-tracks=\"$tracks\"" 'data-window="busiest"'
  legend=$(attr legend-ops "$(grep -o '<body[^>]*>' "$out/dom.html")")
  for op in $ops; do
    [[ ,$legend, == *",$op,"* ]] || fail "the trace's legend has no $op: '$legend'"
  done
  grep -q 'busiest stretch) - press 0 for all' "$out/dom.html" || fail "the trace view does not say what it shows"
  load "$page#all" 1500,420 "$out/trace-all.png" "data-tracks=\"$tracks\"" 'data-window="all"'
  load "$page" 1000,460 "$out/trace-1000.png" "data-tracks=\"$tracks\"" 'data-window="busiest"'
  # zoomed: 0.4 ms from just before the first enqueue
  first=$(grep -o '"cat":"enqueue"[^}]*"ts":[0-9.]*' "$out/memory_view.trace.json" | head -1 | sed 's/.*"ts"://')
  zoom=$(awk -v t="${first:-0}" 'BEGIN { a = t / 1000 - 0.02; if (a < 0) a = 0; printf "%.3f-%.3f", a, a + 0.4 }')
  load "$page#t=$zoom" 1500,420 "$out/trace-zoomed.png" 'data-window="asked"' "data-view=\"$zoom\""
  interact "$page" interact_trace.js 1500,420
  echo "observe.sh browser: OK ($segments segments, $drawn timeline bands, $tracks tracks drawn; screenshots in $out)"
  ;;
*)
  echo "usage: observe.sh example|env|browser BIN_DIR OUT_DIR" >&2
  exit 2
  ;;
esac
