#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# tests/gpu/steps_tests.sh - run.sh's test steps: conformance, parity, torch-viz,
# ctest and gpu (the suites of this build on cuda and cpu).
# Sourced by tests/gpu/run.sh (its variables, helpers and step list; the
# steps and their order are documented there); not run on its own.

# ---------------------------------------------------------------- conformance
# The backend-generic suites (tests/conformance), registered for cpu and cuda
# by the one build: cpu/<entry> and cuda/<entry>.
if want conformance; then
    CL=$OUT/conformance.log
    # XDEV_GPU_CONFORMANCE_REGEX narrows the entries (ctest -R)
    creg=()
    [ -n "${XDEV_GPU_CONFORMANCE_REGEX:-}" ] && creg=(-R "$XDEV_GPU_CONFORMANCE_REGEX")
    # XDEV_GPU_CONFORMANCE_S (default 300) bounds the step, XDEV_GPU_CONFORMANCE_JOBS (default 4)
    # sets ctest -j: on four GPUs the entries that walk every device take longer
    XT_REQUIRE_BACKENDS=cpu,cuda run_to "$CL" "${XDEV_GPU_CONFORMANCE_S:-300}" ctest --test-dir "$B" \
        -L conformance "${creg[@]}" -V -j "${XDEV_GPU_CONFORMANCE_JOBS:-4}" --timeout 120
    crc=$?
    for be in cuda cpu; do
        rows=$(grep -E "^ *[0-9]+/[0-9]+ Test +#[0-9]+: $be/" "$CL")
        n=$(grep -c . <<<"$rows")
        ok=$(grep -c ' Passed ' <<<"$rows")
        skip=$(grep -c 'Skipped' <<<"$rows")
        note "conformance on $be: $n entries: $ok passed, $skip skipped, $((n - ok - skip)) failed"
    done
    note "conformance (ctest -L conformance, one build, cuda + cpu): $(grep -E 'tests passed|tests failed' "$CL" | tail -1)"
    if ((crc == 124 || crc == 137)) && tail -1 "$CL" | grep -q '^\[rc '; then
        # ctest ran and was stopped (not a step the budget left out: run_to wrote NOT RUN
        # then): say so, with what had finished; the total line above is empty then
        total=$(grep -oE '^ *[0-9]+/[0-9]+ Test' "$CL" | head -1 | sed -E 's#^ *[0-9]+/([0-9]+).*#\1#')
        done_n=$(grep -cE '^ *[0-9]+/[0-9]+ Test +#' "$CL")
        note "  conformance INCOMPLETE: stopped at its time limit (rc $crc) with $done_n of ${total:-?} entries finished"
    fi
    grep -E '\((Failed|Timeout|SEGFAULT|Subprocess aborted)\)' "$CL" | sed 's/^/  /' | tee -a "$SUM"
    grep -E '^[[:space:]]*[0-9]+ - .*\(Skipped\)' "$CL" | sed 's/^/  skipped entry: /' | tee -a "$SUM"
    grep -E '^[0-9]+: SKIP ' "$CL" | sed -E 's/^[0-9]+: //' | sort | uniq -c | sed 's/^/  /' |
        tee -a "$SUM"
fi

# ---------------------------------------------------------------- torch.cuda 2.x parity
if want parity; then
    PL=$OUT/parity.log
    INFO=$B/tools/xdev-info
    { echo "== nvidia-smi -q"; nvidia-smi -q; echo "== nvidia-smi -L"; nvidia-smi -L; } >"$OUT/nvidia-smi-q.txt" 2>&1
    XDEV_BACKEND=cuda run_to "$PL" 30 "$INFO"
    if run_to "$PL" 60 python3 tests/gpu/parity_check.py "$INFO"; then
        note "parity: xdev-info beside nvidia-smi: every GPU agrees (UUID, PCI, readings, bf16/tf32, MIG)"
    else
        note "parity: xdev-info and nvidia-smi DISAGREE:"
        grep -E 'MISMATCH|lists only' "$PL" | sed 's/^/  /' | tee -a "$SUM"
    fi
    # The UUID path: the last GPU by its full UUID through CUDA_VISIBLE_DEVICES (the driver),
    # then by an 8-digit prefix through XDEV_VISIBLE_DEVICES (xdev), each the only cuda device.
    uuid=$(nvidia-smi --query-gpu=uuid --format=csv,noheader | grep '^GPU-' | tail -1)
    for how in "CUDA_VISIBLE_DEVICES=$uuid" "XDEV_VISIBLE_DEVICES=${uuid:0:12}"; do
        out=$(env "$how" XDEV_BACKEND=cuda "$INFO" 2>&1)
        echo "\$ $how xdev-info" >>"$PL"
        echo "$out" >>"$PL"
        if [ "$(grep -c '^  cuda:[0-9]' <<<"$out")" = 1 ] && grep -q "uuid $uuid" <<<"$out"; then
            note "parity: $how: one cuda device, uuid $uuid: ok"
        else
            note "parity: $how: FAILED (see parity.log)"
        fi
    done
    mig=$(nvidia-smi -L | grep -o 'MIG-[^)]*' | head -1)
    if [ -n "$mig" ]; then
        out=$(env XDEV_VISIBLE_DEVICES="$mig" CUDA_VISIBLE_DEVICES="$mig" XDEV_BACKEND=cuda "$INFO" 2>&1)
        echo "$out" >>"$PL"
        grep -q "MIG yes" <<<"$out" && note "parity: $mig: listed as a MIG instance: ok" ||
            note "parity: $mig: FAILED (not listed as MIG; see parity.log)"
    else
        note "parity: no MIG instance on this machine (nvidia-smi -L): the MIG path not run"
    fi
    XDEV_BACKEND=cuda run_to "$PL" 20 "$INFO" --watch 1 --watch-count 3
    nvidia-smi --query-gpu=index,temperature.gpu,power.draw,clocks.sm,memory.used --format=csv >>"$PL" 2>&1
    XDEV_BACKEND=cuda XT_REQUIRE_BACKENDS=cuda run_to "$PL" 120 ctest --test-dir "$B" \
        -R '^cuda/(sync_debug|device_ext|host_stats)' -V
    note "parity: cuda/sync_debug, device_ext, host_stats: $(grep -E 'tests passed|tests failed' "$PL" | tail -1)"
fi

# ---------------------------------------------------------------- torch's memory viewer
if want torch-viz; then
    SNAP=$OUT/snapshot_cuda.pickle
    XDEV_BACKEND=cuda XT_KEEP_SNAPSHOT=$SNAP run_to "$OUT/tests.log" 60 \
        "$B/tests/conformance/test_snapshot_torch"
    run_to "$OUT/tests.log" 60 python3 -c "
import pickle, sys
from torch.cuda import _memory_viz as v
d = pickle.load(open('$SNAP', 'rb'))
seg, tr = v.segment_plot(d), v.trace_plot(d)
open('$OUT/snapshot_segments.html', 'w').write(seg)
open('$OUT/snapshot_trace.html', 'w').write(tr)
print('torch-viz: segment_plot %d bytes, trace_plot %d bytes, %d segments, %d trace entries'
      % (len(seg), len(tr), len(d['segments']), len(d['device_traces'][0])))"
    note "$(grep -E '^(torch-viz|check_torch_snapshot):' "$OUT/tests.log" | tail -2 | tr '\n' ' ')"
    grep -q '^torch-viz:' "$OUT/tests.log" || note "torch-viz: torch's viewer did NOT open the snapshot (tests.log)"
fi

# ---------------------------------------------------------------- ctest
if want ctest; then
    run_to "$OUT/tests.log" 150 ctest --test-dir "$B" -LE gpu --output-on-failure -j 4 --timeout 60
    note "ctest, all but tests/gpu: $(grep -E 'tests passed|tests failed' "$OUT/tests.log" | tail -1)"
    grep -E '\((Failed|Timeout|SEGFAULT|Subprocess aborted)\)' "$OUT/tests.log" | sed 's/^/  /' | tee -a "$SUM"
    grep -E '^[[:space:]]*[0-9]+ - .*\(Skipped\)' "$OUT/tests.log" | sed 's/^/  skipped: /' | tee -a "$SUM"
fi
if want gpu; then
    run_to "$OUT/tests.log" 150 ctest --test-dir "$B" -L gpu -V --timeout 60
    note "ctest -L gpu (tests/gpu, XDEV_BACKEND=cuda): $(grep -E 'tests passed|tests failed' "$OUT/tests.log" | tail -1)"
    grep -E '\((Failed|Timeout|SEGFAULT|Subprocess aborted)\)|(Passed|Skipped) +[0-9.]+ sec' "$OUT/tests.log" |
        grep -E 'cuda\.' | sed 's/^/  /' | tee -a "$SUM"
    grep -E '^[0-9]+: (SKIP|OOM message|first:|later:|cuda:|NVML|process|no processes|parent:|child:)' \
        "$OUT/tests.log" | sort -u | sed 's/^/  /' | tee -a "$SUM"
fi
