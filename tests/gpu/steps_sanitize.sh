#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# tests/gpu/steps_sanitize.sh - run.sh's steps under compute-sanitizer and the
# multi-process ones: rendezvous, interop, python, stream-sanitizer,
# sanitizer-multi, sanitizer.
# Sourced by tests/gpu/run.sh (its variables, helpers and step list; the
# steps and their order are documented there); not run on its own.

# ---------------------------------------------------------------- compute-sanitizer
SAN=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
sanitize() { # TOOL NAME CMD...   (SAN_ARGS: more compute-sanitizer options)
    local tool=$1 name=$2 start summary
    shift 2
    # (the first call finds no log yet: the redirection's error is the group's)
    start=$({ wc -l <"$OUT/sanitizer.log"; } 2>/dev/null || echo 0)
    # shellcheck disable=SC2086 # SAN_ARGS is a list of options
    run_to "$OUT/sanitizer.log" 120 env XDEV_BACKEND=cuda XG_UNDER_SANITIZER=1 CK_FORK=no \
        "$SAN" --tool "$tool" ${SAN_ARGS:-} --error-exitcode 99 "$@"
    local rc=$?
    summary=$(tail -n +$((start + 1)) "$OUT/sanitizer.log" | grep -E '(ERROR|RACECHECK) SUMMARY' | tail -1)
    note "  $tool $name: rc $rc, ${summary:-no summary}"
}
# The torch.cuda.comm functions and the communicators (NCCL inside, every
# GPU of the machine as ranks; one GPU: a group of one). NCCL hits CUDA API
# errors it handles itself (cudaFuncGetAttributes on kernels built for other
# GPUs, enabling peer access already enabled): not reported as API errors;
# every memory access is still checked. Once per run.
san_comm() {
    [ -n "${SAN_COMM_DONE:-}" ] && return
    SAN_COMM_DONE=1
    SAN_ARGS="--report-api-errors no" sanitize memcheck \
        "test_comm (broadcast, reduce_add over NCCL, scatter, gather)" \
        "$B/tests/conformance/test_comm" comm
    SAN_ARGS="--report-api-errors no" sanitize memcheck \
        "test_communicator (NCCL collectives, one process)" \
        "$B/tests/conformance/test_communicator" communicator
    SAN_ARGS="--report-api-errors no" sanitize memcheck \
        "test_comm_procs (NCCL, a rank per process, every collective and dtype)" \
        "$B/tests/conformance/test_comm_procs" comm_procs
}
if want rendezvous; then
    RL=$OUT/rendezvous.log
    ngpu=$(nvidia-smi -L | grep -c '^GPU ')
    for net in default forced; do
        env_args=(NCCL_DEBUG=INFO)
        [ "$net" = forced ] && env_args+=(NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1)
        mk=$(wc -l <"$RL" 2>/dev/null || echo 0)
        run_to "$RL" 200 env "${env_args[@]}" bash tests/rendezvous_launchers.sh torchrun \
            "$B/tests/rendezvous_rank" "$ngpu" cuda bench
        note "torchrun, $ngpu ranks on cuda through xdev_communicator_init_env, NCCL transports $net: rc $?"
        tail -n +$((mk + 1)) "$RL" | grep -E '^\||^PASS|^FAIL|^SKIP|rendezvous_rank:' | sed 's/^/  /' | tee -a "$SUM"
        tail -n +$((mk + 1)) "$RL" | grep -oE 'Channel 00/[0-9]+ : [0-9]+\[[0-9]+\] -> [0-9]+\[[0-9]+\]( \[[a-z]+\])? via [^ ]+' |
            sort -u | head -4 | sed 's/^/  NCCL: /' | tee -a "$SUM"
    done
    # The last rank leaves without joining: the watchdog must abort the
    # others' all_reduce within XDEV_COMM_TIMEOUT (10 s here).
    mk=$(wc -l <"$RL")
    run_to "$RL" 120 env XDEV_COMM_TIMEOUT=10 bash tests/rendezvous_launchers.sh torchrun \
        "$B/tests/rendezvous_rank" "$ngpu" cuda die
    note "torchrun, $ngpu ranks on cuda, the last leaves without joining (XDEV_COMM_TIMEOUT=10): rc $?"
    tail -n +$((mk + 1)) "$RL" | grep -E '^PASS|^FAIL|rendezvous_rank:' | cut -c1-400 | sed 's/^/  /' | tee -a "$SUM"
fi
if want interop; then
    IL=$OUT/interop.log
    run_to "$IL" 120 env XDEV_BACKEND=cuda "$B/tests/gpu/test_cuda_interop"
    note "test_cuda_interop (cuda): rc $?"
    grep -E '^test_cuda_interop' "$IL" | sed 's/^/  /' | tee -a "$SUM"
    sanitize memcheck "test_cuda_interop (registered, page-locked and imported memory)" \
        "$B/tests/gpu/test_cuda_interop"
    runs=("")
    [ "$(nvidia-smi -L | grep -c '^GPU ')" -gt 1 ] && runs+=(XDEV_VISIBLE_DEVICES=0)
    for extra in "${runs[@]}"; do
        mk=$(wc -l <"$IL")
        run_to "$IL" 180 env XT_LIBXDEV_DIR="$B/lib" XDEV_BACKEND=cuda $extra \
            python3 tests/gpu/interop_torch.py
        note "interop_torch.py ${extra:-(every GPU visible)}: rc $?"
        tail -n +$((mk + 1)) "$IL" | grep -E '^interop_torch|^SKIP|Error|error' | cut -c1-400 |
            sed 's/^/  /' | tee -a "$SUM"
    done
    # torch's own CUDA calls include errors it handles itself: not reported
    # as API errors; every memory access is still checked.
    XT_LIBXDEV_DIR="$B/lib" SAN_ARGS="--report-api-errors no" sanitize memcheck \
        "interop_torch.py (PyTorch <-> xdev)" python3 tests/gpu/interop_torch.py
fi
if want python; then
    PL=$OUT/python.log
    : >"$PL"
    run_to "$PL" 180 env XDEV_BACKEND=cuda PYTHONPATH="$PWD/python" \
        XDEV_LIBRARY="$(cd "$B/lib" && pwd)/libxdev.so.0" XDEV_CACHE_DIR="$OUT/python-kernel-cache" \
        python3 tests/gpu/python_torch.py
    note "python_torch.py (the xdev package with PyTorch): rc $?"
    grep -E '^python_torch|^SKIP|Error|error' "$PL" | cut -c1-400 | sed 's/^/  /' | tee -a "$SUM"
fi
if want stream-sanitizer; then
    SL=$OUT/stream_sanitizer.log
    for mode in on off bad; do
        env_args=(XDEV_BACKEND=cuda)
        [ "$mode" = on ] && env_args+=(XDEV_SANITIZE=streams)
        run_to "$SL" 120 env "${env_args[@]}" "$B/tests/test_sanitizer" sanitizer "$mode"
        note "test_sanitizer $mode (cuda): rc $? $(grep -E '^[0-9]+%: Checks' "$SL" | tail -1)"
    done
    # Correct code stays silent: the conformance suites with the sanitizer
    # on; what they report is counted (their deliberate races are named).
    for suite in blas fft rng kernel stream event memory ops graph communicator comm; do
        log=$OUT/stream_sanitizer_$suite.log
        run_to "$log" 120 env XDEV_BACKEND=cuda XDEV_SANITIZE=streams XDEV_TEST_SCALE=0.2 \
            XT_SKIP_LIST=backends/cuda/conformance.skip "$B/tests/conformance/test_$suite"
        note "  test_$suite with XDEV_SANITIZE=streams: rc $?, $(grep -c 'xdev sanitizer:' "$log") report(s); $(grep -E '^[0-9]+%: Checks' "$log" | tail -1)"
        grep -A2 'xdev sanitizer:' "$log" | grep -E '^  (is not|[a-zA-Z_ ]+ \()' |
            sed -E 's/ of bytes \[[^)]*\)//; s/^/    /' | cut -c1-220 | tee -a "$SUM"
        grep -A2 'xdev sanitizer:' "$log" | grep -oE 'from [^ ]+\+0x[0-9a-f]+' | sort -u |
            while read -r _ loc; do
                echo "    $loc = $(addr2line -e "${loc%+*}" "${loc##*+}" 2>/dev/null)"
            done | tee -a "$SUM"
    done
    mk=$(mark)
    run_to "$BL" 120 "$B/bench/sanitizer_bench" --rounds 3
    since "$mk" | grep -E '^\||^device|^races' | sed 's/^/  /' | tee -a "$SUM"
fi
if want sanitizer-multi; then
    # Every GPU of the machine: the suites with cross-device tests (peer
    # access, cross-device copies, waits and events between devices), then
    # the collectives.
    note "compute-sanitizer, $(nvidia-smi -L | grep -c '^GPU ') GPUs ($("$SAN" --version 2>&1 | grep -m1 -i version)):"
    for suite in device stream event memory; do
        SAN_ARGS="--report-api-errors no" sanitize memcheck "test_$suite (every GPU)" \
            "$B/tests/conformance/test_$suite" "$suite"
    done
    san_comm
fi
if want sanitizer; then
    note "compute-sanitizer ($("$SAN" --version 2>&1 | grep -m1 -i version)):"
    sanitize memcheck "test_cuda runtime" "$B/tests/gpu/test_cuda" runtime
    sanitize memcheck "test_cuda async" env XDEV_ALLOC_CONF=backend:async "$B/tests/gpu/test_cuda" async
    sanitize memcheck "test_cuda_ipc (2 processes)" "$B/tests/gpu/test_cuda_ipc"
    sanitize memcheck "copy_bench 4,16 MiB" "$B/bench/gpu/copy_bench" --sizes-mb 4,16 --reps 2
    # XDEV_BACKEND=cuda (sanitize); CK_FORK=no runs the tests in this process.
    sanitize memcheck "test_blas (GEMM every dtype, level 1)" env XDEV_TEST_SCALE=0.1 \
        "$B/tests/conformance/test_blas" blas
    sanitize memcheck "test_fft (c2c/r2c/c2r, scaling, plan cache)" env XDEV_TEST_SCALE=0.1 \
        "$B/tests/conformance/test_fft" fft fft
    # case fft_host_fn calls the runtime from a host function on purpose (CUDA answers
    # cudaErrorNotPermitted, and the plan must then be kept): API errors are expected there
    SAN_ARGS="--report-api-errors no" sanitize memcheck "test_fft (an eviction in a host function)" \
        "$B/tests/conformance/test_fft" fft fft_host_fn
    # without caching (plain cudaMalloc/cudaFree, a free waiting for the device): the
    # concurrent plan-cache cases failed once so in a parallel conformance run (2026-11-30:
    # CUFFT_INTERNAL_ERROR in cufftMakePlanMany64, then illegal-address errors)
    # (every case: fft_host_fn's expected API errors are not counted)
    SAN_ARGS="--report-api-errors no" sanitize memcheck "test_fft, XDEV_NO_MEMORY_CACHING=1" \
        env XDEV_NO_MEMORY_CACHING=1 XDEV_TEST_SCALE=0.1 "$B/tests/conformance/test_fft" fft
    sanitize memcheck "test_ops (fills, 36 conversion pairs)" "$B/tests/conformance/test_ops" ops
    sanitize memcheck "test_observe (tags, memory view, stream trace)" \
        "$B/tests/conformance/test_observe" observe
    sanitize memcheck "test_alloc_expandable (virtual memory mappings)" \
        env XDEV_ALLOC_CONF=expandable_segments:true "$B/tests/conformance/test_alloc_expandable"
    sanitize memcheck "test_alloc_threads (arenas)" "$B/tests/conformance/test_alloc_threads"
    san_comm
    # Kernels: the driver has no parameter count for a native function, so
    # the plugin reads cuFuncGetParamInfo until it fails (an API error the
    # sanitizer would count); memory accesses are all checked.
    SAN_ARGS="--report-api-errors no" sanitize memcheck \
        "test_kernel (every conformance kernel, launch checks)" env XDEV_TEST_SCALE=0.1 \
        "$B/tests/conformance/test_kernel" kernel
    SAN_ARGS="--report-api-errors no" sanitize racecheck \
        "test_kernel (shared memory and barriers)" env XDEV_TEST_SCALE=0.1 \
        "$B/tests/conformance/test_kernel" kernel
    SAN_ARGS="--report-api-errors no" sanitize memcheck \
        "test_kernel_rtc (NVRTC, the cache, element-wise kernels)" \
        env XDEV_CACHE_DIR="$OUT/rtc-cache" "$B/tests/conformance/test_kernel_rtc" kernel_rtc
    SAN_ARGS="--report-api-errors no" sanitize memcheck \
        "test_graph (capture, replay, fork/join, RNG per replay, pools, illegal ops)" \
        "$B/tests/conformance/test_graph" graph
    SAN_ARGS="--report-api-errors no" sanitize racecheck "test_graph" \
        "$B/tests/conformance/test_graph" graph
    sanitize racecheck "test_cuda runtime" "$B/tests/gpu/test_cuda" runtime
    sanitize racecheck "copy_bench 4,16 MiB" "$B/bench/gpu/copy_bench" --sizes-mb 4,16 --reps 2
fi
