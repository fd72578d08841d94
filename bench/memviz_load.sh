#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# bench/memviz_load.sh - how long a browser takes to open the memory view of a
# large snapshot (bench/memviz_bench): headless chromium loads the page
# REPS times in fresh profiles; prints the page's own drawing time (from
# parsing the snapshot to the last canvas, data-render-ms) and the wall time
# of the whole browser run (start, load, draw, DOM dump, exit) per load.
#
#   bench/memviz_load.sh BUILD_DIR [SEGMENTS] [HISTORY] [REPS]
set -euo pipefail
build=$1 segs=${2:-4000} hist=${3:-100000} reps=${4:-5}
chrome=$(command -v chromium || command -v chromium-browser || command -v google-chrome)
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
XDEV_BACKEND=${XDEV_BACKEND:-cpu} XDEV_CPU_MEMORY=${XDEV_CPU_MEMORY:-64G} \
  "$build/bench/memviz_bench" --segments "$segs" --history "$hist" --out "$dir/big"
echo "page: $(du -h "$dir/big.html" | cut -f1)"
for i in $(seq "$reps"); do
  t0=$(date +%s%N)
  body=$(timeout 300 "$chrome" --headless --no-sandbox --disable-gpu --user-data-dir="$dir/p$i" \
    --window-size=1400,1000 --dump-dom "file://$dir/big.html" 2>/dev/null | grep -o '<body[^>]*>')
  t1=$(date +%s%N)
  ms=$(sed -n 's/.*data-render-ms="\([0-9.]*\)".*/\1/p' <<< "$body")
  echo "load $i: page drew in $ms ms; browser run $(( (t1 - t0) / 1000000 )) ms; ${body:0:120}"
done
