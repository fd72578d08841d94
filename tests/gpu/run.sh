#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# tests/gpu/run.sh - build xdev on a GPU machine and run everything that needs
# the GPU, in steps (XDEV_GPU_STEPS, commas or spaces; default: all but the
# optional ones):
#   build          Release build with -DXDEV_WERROR=ON (retried with OFF)
#   conformance    ctest -L conformance in the same build: the backend-generic
#                  suites on cuda and on cpu in one run (XT_REQUIRE_BACKENDS
#                  =cpu,cuda: an unusable cuda fails instead of skipping;
#                  XDEV_GPU_CONFORMANCE_REGEX narrows it, as ctest -R)
#   gpu            ctest -L gpu: the CUDA-only suites of tests/gpu
#   parity         torch 2.x's torch.cuda (issue 49): xdev-info beside
#                  nvidia-smi -q in the same run (tests/gpu/parity_check.py:
#                  UUID, PCI bus id, temperature, power, SM clock, memory
#                  used, bf16/tf32, MIG); the UUID path (CUDA_VISIBLE_DEVICES=
#                  GPU-<uuid> and XDEV_VISIBLE_DEVICES=GPU-<prefix>, MIG-<...>
#                  where nvidia-smi -L lists MIG instances); xdev-info --watch;
#                  the sync debug mode warning on cuda
#   sanitizer      compute-sanitizer memcheck and racecheck over tests/gpu,
#                  copies, and a small GEMM + FFT run (test_blas, test_fft)
#   sanitizer-multi  memcheck over the suites with cross-device tests (device,
#                  stream, event, memory) and the collectives, on every GPU
#   bench-runtime  runtime_bench vs raw CUDA (cuda_runtime_bench), twice; then
#                  runtime_pair_bench (event record, host-function enqueue: both
#                  sides in one process)
#   bench-copy     copy_bench: pinned/pageable H2D/D2H vs raw cudaMemcpy
#   capture        bench/traces/capture.py: multi-stream allocation traces from
#                  PyTorch workloads into bench/traces/ (and $OUT/traces)
#   bench-comm     comm_bench: all_reduce over the GPUs, xdev vs NCCL by hand;
#                  broadcast, xdev_comm_broadcast vs NCCL by hand as
#                  torch.cuda.comm issues it
#   bench-comm-torch  bench/gpu/comm_torch.py: xdev vs torch.cuda.comm and
#                  torch.distributed (NCCL) through one Python harness
#   bench-alloc    alloc_bench vs c10's hot pair and churn; every trace
#                  (.traces/, bench/traces/) through bench/replay_compare.py:
#                  xdev's policies, backend:async and c10 under one harness
#   bench-blas     gemm_bench: xdev_gemm vs cublasGemmEx (f32, tf32, bf16)
#   bench-fft      fft_overhead_bench: xdev_fft_exec (cache hit) vs cufftExec
#   heat           examples/heat on cuda and on cpu (--disable-gpu), same seed:
#                  the integer checksum identical, the change / temperature
#                  curve within 1e-4 relative (tests/gpu/heat_compare.py)
#   bench-kernel   kernel_launch_bench: xdev_launch_kernel vs cuLaunchKernel of
#                  the same fatbin (host ns per launch, checks full and basic;
#                  STREAM triad GB/s), each side a fresh process; then
#                  kernel_cpu_bench on this host's cores (XDEV_BACKEND=cpu):
#                  kernels vs OpenMP loops, bandwidth, thread scaling
#                  (XDEV_GPU_KERNEL_RTC=0 leaves out the run-time compile
#                  benches, nvrtc_bench and kernel_rtc_bench)
#   bench-barrier  barrier_cpu_bench: five barrier kernels in the block form,
#                  the fiber form and OpenMP on this host's cores, then both
#                  forms on cuda:0 (each side a fresh process)
#   bench-graph    graph_raw_bench: a 200-op step (kernels, copies, a GEMM, a
#                  random fill), host time per step: xdev eager vs xdev graph
#                  replay vs raw CUDA eager and graphs by hand (each side a
#                  fresh process; graph_bench's verify checks replay == eager
#                  first); bench/gpu/graph_torch.py: the same step in torch,
#                  eager vs torch.cuda.CUDAGraph; graph_bench on cpu
#   torch-viz      a cuda memory snapshot from xdev_memory_snapshot_torch,
#                  opened by PyTorch's own viewer (torch.cuda._memory_viz
#                  segment_plot and trace_plot; the pages land in $OUT)
#   observe        tests/observe/observe.sh example + env on cuda (memory view,
#                  stream trace with device times checked by check_trace.py,
#                  XDEV_TRACE_FILE); the pages and trace land in $OUT/observe;
#                  memviz_bench's large snapshot (page build time)
#   bench-trace    runtime_bench with the tracer compiled out, compiled in
#                  but off, and on (XDEV_TRACE_FILE), twice, interleaved
#   bench-ops      ops_bench: typed fills / conversions vs memset / copy on
#                  cuda (and on cpu), bit identity of every conversion pair
#   bench-prim     prim_bench (issue 44): every primitive (reduce, scan, sort
#                  keys and pairs, segmented reduce and sort, histogram, select
#                  flagged and if, unique, run-length encode) at 2^24 .. 2^28
#                  on cuda:0, xdev vs CUB called directly (outputs checked,
#                  xdev deterministic for the f32 sums); then the CPU backend
#                  on the host's cores: reduce and scan bytes/s vs the same
#                  run's copy for f32, f64, i32 and i64, sort of 2^26 u32 vs
#                  __gnu_parallel::sort (each side a fresh process; the
#                  tables in bench-prim.log; an anchor side that did not build
#                  or run fails the script). XDEV_GPU_PRIM_SPECS (e.g.
#                  "cuda:0") and XDEV_GPU_PRIM_ARGS (e.g. "--prims select_if")
#                  narrow it
#   scan-scaling   the CPU backend's f32 scan and reduce at 1, 2, 4, 8 and
#                  all of the host's threads, for each XDEV_CPU_SCAN_ISA (auto,
#                  the scalar walk, the vector lanes, the lanes never
#                  streaming): where the scan stops scaling, which path pays
#                  (XDEV_GPU_SCAN_ISAS, XDEV_GPU_SCAN_THREADS narrow it)
#   managed        managed_bench on cuda:0: a kernel over prefetched managed
#                  memory vs device memory (issue 46: >= 0.95x)
#   bench-shadow   shadow_bench on cuda:0: us per call with the shadow off,
#                  XDEV_SHADOW=cpu and XDEV_SHADOW_COMPARE=sync (issue 45)
#   tf32           tf32_bench: the seed's 10240^2 TF32 on/off experiment
#   rng            build/bench/rng_bench and bench/gpu/rng_torch.py, if present;
#                  rng_bench again with XDEV_BACKEND=cpu at 2^26 (fills / copy)
#   rendezvous     torchrun starts one rank per GPU of tests/rendezvous_rank
#                  (xdev_communicator_init_env on cuda, NCCL): sums checked,
#                  all_reduce bus bandwidth; again with NCCL's network
#                  transport forced (NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1);
#                  then the last rank leaves without joining: the watchdog
#                  must abort the others' all_reduce (XDEV_COMM_TIMEOUT=10)
#   interop        memory xdev did not allocate, on cuda: test_cuda_interop
#                  (cudaMalloc'd and malloc'd buffers, kDLCUDA tensors), the
#                  same under compute-sanitizer memcheck, and
#                  tests/gpu/interop_torch.py (PyTorch <-> xdev through DLPack;
#                  on two GPUs again with XDEV_VISIBLE_DEVICES=0; then under
#                  memcheck)
#   sleep-wake     sleep_wake_bench on cuda:0: xdev_memory_sleep (keep) and
#                  xdev_memory_wake of XDEV_SLEEP_GIB (default 40) GiB in 8
#                  tags vs the same run's pinned copy bandwidth each way
#                  (goal >= 0.9x both ways), free memory while asleep within
#                  1% of before the allocations, contents checked
#   python         tests/gpu/python_torch.py: the xdev Python package (python/)
#                  with PyTorch: one kernel source compiled for cuda:0 and cpu:0,
#                  launched on a torch CUDA tensor and a NumPy array; the DLPack
#                  stream handshake both ways
#   stream-sanitizer  XDEV_SANITIZE=streams on cuda: test_sanitizer (races
#                  reported, ordered code silent, off, malformed); the
#                  conformance suites run with it on (reports counted: only
#                  their deliberate races); sanitizer_bench (cost per call)
# Optional (named explicitly): ctest (every entry but tests/gpu's). "bench" =
# the three bench-runtime, bench-copy, bench-alloc. "hip-nv" = the three:
#   hip-nv-build   the HIP plugin for HIP's NVIDIA platform in its own build
#                  ($XDEV_GPU_BUILD-hipnv: -DXDEV_HIP_PLATFORM_NVIDIA=ON,
#                  -DXDEV_WERROR=ON; HIP's headers from .device-debs/hip/
#                  through tests/gpu/hip_headers.sh prepare)
#   hip-nv-conformance  ctest -L conformance-hip there: every conformance
#                  entry with XDEV_BACKEND=hip (XT_REQUIRE_BACKENDS=hip: a
#                  plugin that does not load or finds no GPU fails)
#   hip-nv-sanitizer  compute-sanitizer memcheck over 14 of the HIP plugin's
#                  suites, kernel_rtc included (XDEV_BACKEND=hip; API errors
#                  not reported: the suites make some on purpose; every
#                  memory access is checked)
# The three fit one call (about 350 s on the H200: the build 221-232 s):
#   XDEV_GPU_STEPS=hip-nv bash tests/gpu/run.sh
#
# On the device machine, from the repository root, with the Debian packages
# of .device-debs (Check, OpenBLAS, FFTW) and the traces copied into .traces/:
#
#   eval "$(bash .device-debs/device-debs.sh env)" && bash tests/gpu/run.sh
#   XDEV_GPU_STEPS=build,conformance,bench-blas ... bash tests/gpu/run.sh
#
# A benchmark whose anchor side (c10, NCCL by hand, cuLaunchKernel, raw CUDA graphs) did not
# build or run is named at the end of the summary, and the script then exits 1.
#
# Logs go to $OUT (default /tmp/xdev-gpu): build.log, conformance.log,
# tests.log, sanitizer.log, bench.log and summary.txt, which is also printed
# last. Steps run within a budget (XDEV_GPU_BUDGET_S, default 530 s): what
# does not fit is reported as not run.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
OUT=${OUT:-/tmp/xdev-gpu}
mkdir -p "$OUT"
B=${XDEV_GPU_BUILD:-build-gpu}
BUDGET=${XDEV_GPU_BUDGET_S:-530}
DEFAULT_STEPS="build conformance parity heat torch-viz gpu sanitizer bench-runtime bench-copy bench-alloc bench-blas"
DEFAULT_STEPS+=" bench-fft bench-kernel bench-barrier bench-graph bench-ops bench-prim tf32 rng observe bench-trace"
DEFAULT_STEPS+=" stream-sanitizer interop sleep-wake managed bench-shadow scan-scaling python"
STEPS=" ${XDEV_GPU_STEPS:-$DEFAULT_STEPS} "
STEPS=${STEPS//,/ }
[[ "$STEPS" == *" bench "* ]] && STEPS+=" bench-runtime bench-copy bench-alloc bench-comm "
[[ "$STEPS" == *" hip-nv "* ]] && STEPS+=" hip-nv-build hip-nv-conformance hip-nv-sanitizer "
JOBS=$(nproc)
SUM=$OUT/summary.txt
: >"$SUM"

note() { printf '%s\n' "$*" | tee -a "$SUM"; }
# A benchmark's anchor side (c10, raw CUDA, torch) that did not build or run: the comparison
# is empty, so the summary says so at the end and the script fails.
ANCHORS_MISSING=()
anchor_missing() {
    note "  ANCHOR MISSING: $*"
    ANCHORS_MISSING+=("$*")
}
left() { echo $((BUDGET - SECONDS)); }
want() { [[ "$STEPS" == *" $1 "* ]]; }
# run_to LOG SECONDS CMD...: run with a time limit, appending to LOG; returns the status.
run_to() {
    local log=$1 limit=$2
    shift 2
    local l
    l=$(left)
    ((limit > l)) && limit=$l
    if ((limit < 5)); then
        echo "NOT RUN (budget spent): $*" | tee -a "$log" >>"$SUM"
        return 124
    fi
    echo "\$ $*" >>"$log"
    timeout -k 5 "$limit" "$@" >>"$log" 2>&1
    local rc=$?
    echo "[rc $rc, ${SECONDS}s]" >>"$log"
    return $rc
}

{
    echo "== machine"
    nvidia-smi --query-gpu=name,driver_version,memory.total,pcie.link.gen.current,pcie.link.width.current --format=csv 2>&1
    nvcc --version 2>&1 | tail -2
    cmake --version | head -1
    nproc
} >"$OUT/build.log" 2>&1
note "GPU: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>&1 | head -1)"
note "steps:$(echo "$STEPS" | tr -s ' ' ' ')"

# NCCL for the CUDA plugin's communicators: nccl.h for the build where the
# toolkit has none, libnccl.so.2 at run time (XDEV_NCCL_PATH) - PyTorch's
# nvidia-nccl wheel on the GPU machines. NVLink multicast stays off.
export NCCL_NVLS_ENABLE=0
NCCL_DIR=$(python3 -c 'import nvidia.nccl, os; print(os.path.dirname(nvidia.nccl.__file__))' \
    2>/dev/null || python3 -c 'import nvidia.nccl; print(list(nvidia.nccl.__path__)[0])' 2>/dev/null)
nccl_flags=()
if [ -n "$NCCL_DIR" ] && [ -e "$NCCL_DIR/lib/libnccl.so.2" ]; then
    export XDEV_NCCL_PATH=$NCCL_DIR/lib/libnccl.so.2
    [ -e /usr/local/cuda/include/nccl.h ] || nccl_flags=(-DXDEV_NCCL_INCLUDE_DIR="$NCCL_DIR/include")
fi

# ---------------------------------------------------------------- build
if want build; then
    gen=()
    command -v ninja >/dev/null && gen=(-G Ninja)
    # Device code for this machine's GPUs only (XDEV_GPU_ARCHS, default: what nvidia-smi says,
    # e.g. 90 on an H200): nvcc compiling CUB for three targets took most of the build's 6 min.
    ARCHS=${XDEV_GPU_ARCHS:-$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null |
        tr -d '. ' | sort -u | paste -sd';')}
    arch_flags=()
    [ -n "$ARCHS" ] && arch_flags=(-DCMAKE_CUDA_ARCHITECTURES="$ARCHS" -DXDEV_KERNELS_CUDA_ARCHS="$ARCHS")
    note "build: device code for sm_${ARCHS:-default}"
    if run_to "$OUT/build.log" 200 cmake -S . -B "$B" "${gen[@]}" -DCMAKE_BUILD_TYPE=Release \
        -DXDEV_WERROR=ON -DXDEV_BUILD_HIP=OFF "${arch_flags[@]}" "${nccl_flags[@]}" && run_to "$OUT/build.log" 240 cmake --build "$B" -j "$JOBS"; then
        note "build: Release, -DXDEV_WERROR=ON: ok (${SECONDS}s)"
    else
        note "build: Release -DXDEV_WERROR=ON FAILED; first errors:"
        grep -m8 -E 'error:|Error' "$OUT/build.log" | tee -a "$SUM"
        note "build: retrying with -DXDEV_WERROR=OFF so the GPU steps still run"
        run_to "$OUT/build.log" 30 cmake -S . -B "$B" -DXDEV_WERROR=OFF &&
            run_to "$OUT/build.log" 240 cmake --build "$B" -j "$JOBS" ||
            { note "build FAILED"; cat "$SUM"; exit 1; }
        note "build: Release, XDEV_WERROR=OFF: ok (${SECONDS}s)"
    fi
fi
# ---------------------------------------------------------------- hip-nv
# The HIP plugin's code on this GPU through HIP's NVIDIA platform (issue 48):
# the hip* calls are HIP's wrappers over CUDA, so every HIP path of the
# shared sources runs; what it cannot run is backends/hip/conformance.skip
# plus nvidia.skip, each with its reason.
HB=$B-hipnv
HL=$OUT/hip-nv.log
if want hip-nv-build; then
    HIPINC=$(bash tests/gpu/hip_headers.sh prepare /tmp/xdev-hip 2>>"$HL")
    if [ -z "$HIPINC" ]; then
        note "hip-nv: HIP's headers not prepared (no .device-debs/hip/libamdhip64-dev_*.deb? hip-nv.log)"
    else
        gen=()
        command -v ninja >/dev/null && gen=(-G Ninja)
        if run_to "$HL" 200 cmake -S . -B "$HB" "${gen[@]}" -DCMAKE_BUILD_TYPE=Release -DXDEV_WERROR=ON \
            -DXDEV_HIP_PLATFORM_NVIDIA=ON -DXDEV_HIP_INCLUDE_DIR="$HIPINC" -DXDEV_BUILD_BENCH=OFF \
            -DXDEV_BUILD_EXAMPLES=OFF "${nccl_flags[@]}" &&
            run_to "$HL" 400 cmake --build "$HB" -j "$JOBS"; then
            hv=$(awk '/define HIP_VERSION_(MAJOR|MINOR|PATCH) /{v = v (v ? "." : "") $3} END {print v}' \
                "$HIPINC/hip/hip_version.h")
            note "hip-nv build: HIP $hv headers ($HIPINC) on the NVIDIA platform, -DXDEV_WERROR=ON: ok (${SECONDS}s)"
        else
            note "hip-nv build FAILED; first errors:"
            grep -m8 -E 'error:|Error' "$HL" | tee -a "$SUM"
        fi
    fi
fi
if want hip-nv-conformance || want hip-nv-sanitizer; then
    [ -e "$HB/lib/libxdev-hip.so" ] || note "hip-nv: no $HB/lib/libxdev-hip.so (run the hip-nv-build step)"
fi
if want hip-nv-conformance && [ -e "$HB/lib/libxdev-hip.so" ]; then
    HC=$OUT/hip-nv-conformance.log
    XT_REQUIRE_BACKENDS=hip run_to "$HC" 400 ctest --test-dir "$HB" -L conformance-hip -V -j 4 \
        --timeout 120
    rows=$(grep -E "^ *[0-9]+/[0-9]+ Test +#[0-9]+: hip/" "$HC")
    n=$(grep -c . <<<"$rows")
    ok=$(grep -c ' Passed ' <<<"$rows")
    skip=$(grep -c 'Skipped' <<<"$rows")
    note "hip-nv conformance (XDEV_BACKEND=hip on HIP's NVIDIA platform): $n entries: $ok passed, $skip skipped, $((n - ok - skip)) failed"
    grep -E '\((Failed|Timeout|SEGFAULT|Subprocess aborted|Not Run)\)' "$HC" | sed 's/^/  /' | tee -a "$SUM"
    grep -E '^[[:space:]]*[0-9]+ - .*\(Skipped\)' "$HC" | sed 's/^/  skipped entry: /' | tee -a "$SUM"
    grep -E '^[0-9]+: FAIL ' "$HC" | sed -E 's/^[0-9]+: //' | sort | uniq -c | cut -c1-300 | sed 's/^/  /' |
        tee -a "$SUM"
    grep -E '^[0-9]+: SKIP ' "$HC" | sed -E 's/^[0-9]+: //' | sort | uniq -c | sed 's/^/  /' | tee -a "$SUM"
    # The first failing checks, for the failed entries.
    grep -E '^[0-9]+: .*:[0-9]+:[EF]:' "$HC" | head -20 | cut -c1-300 | sed 's/^/  /' | tee -a "$SUM"
fi
if want hip-nv-sanitizer && [ -e "$HB/lib/libxdev-hip.so" ]; then
    SAN=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
    HS=$OUT/hip-nv-sanitizer.log
    note "hip-nv compute-sanitizer memcheck, XDEV_BACKEND=hip ($("$SAN" --version 2>&1 | grep -m1 -i version)):"
    for spec in errors device:device stream event memory:memory ops rng:rng kernel kernel_rtc graph \
        observe bounds primitives:prims alloc_threads; do
        exe=test_${spec%%:*}
        args=()
        [[ "$spec" == *:* ]] && args=("${spec#*:}")
        [ -x "$HB/tests/conformance/$exe" ] || { note "  memcheck $exe: not built"; continue; }
        start=$(wc -l <"$HS" 2>/dev/null || echo 0)
        run_to "$HS" 150 env XDEV_BACKEND=hip XT_CONFORMANCE=hip XT_REQUIRE_BACKENDS=hip XG_UNDER_SANITIZER=1 CK_FORK=no \
            XDEV_TEST_SCALE=0.1 XT_SKIP_LIST="$HB/tests/conformance/hip-nvidia.skip" \
            XDEV_CACHE_DIR=/tmp/xdev-hip-rtc-cache \
            "$SAN" --tool memcheck --report-api-errors no --error-exitcode 99 \
            "$HB/tests/conformance/$exe" "${args[@]}"
        rc=$?
        summary=$(tail -n +$((start + 1)) "$HS" | grep -E 'ERROR SUMMARY' | tail -1)
        checks=$(tail -n +$((start + 1)) "$HS" | grep -E '^[0-9]+%: Checks' | tail -1)
        note "  memcheck $exe: rc $rc, ${summary:-no summary}; ${checks:-no Check summary}"
    done
fi
if [ -z "$(tr ' ' '\n' <<<"$STEPS" | grep -v -e '^hip-nv' -e '^$')" ]; then
    note "total ${SECONDS}s (only the hip-nv steps)"
    echo
    echo "================ summary"
    cat "$SUM"
    exit 0
fi

ls "$B"/lib/libxdev-cuda.so >/dev/null 2>&1 || { note "no libxdev-cuda.so built"; cat "$SUM"; exit 1; }

# ---------------------------------------------------------------- conformance
# The backend-generic suites (tests/conformance), registered for cpu and cuda
# by the one build: cpu/<entry> and cuda/<entry>.
if want conformance; then
    CL=$OUT/conformance.log
    # XDEV_GPU_CONFORMANCE_REGEX narrows the entries (ctest -R)
    creg=()
    [ -n "${XDEV_GPU_CONFORMANCE_REGEX:-}" ] && creg=(-R "$XDEV_GPU_CONFORMANCE_REGEX")
    XT_REQUIRE_BACKENDS=cpu,cuda run_to "$CL" 300 ctest --test-dir "$B" -L conformance "${creg[@]}" \
        -V -j 4 --timeout 120
    for be in cuda cpu; do
        rows=$(grep -E "^ *[0-9]+/[0-9]+ Test +#[0-9]+: $be/" "$CL")
        n=$(grep -c . <<<"$rows")
        ok=$(grep -c ' Passed ' <<<"$rows")
        skip=$(grep -c 'Skipped' <<<"$rows")
        note "conformance on $be: $n entries: $ok passed, $skip skipped, $((n - ok - skip)) failed"
    done
    note "conformance (ctest -L conformance, one build, cuda + cpu): $(grep -E 'tests passed|tests failed' "$CL" | tail -1)"
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

# ---------------------------------------------------------------- benchmarks
BL=$OUT/bench.log
touch "$BL"
mark() { wc -l <"$BL"; }
since() { tail -n +$(($1 + 1)) "$BL"; }
export XDEV_BACKEND=cuda # the benchmarks; ctest entries set their own
if want bench-runtime; then
    note "bench-runtime (XDEV_BACKEND=cuda; full tables in bench.log):"
    # Both sides pinned to the same core (a migration mid-batch is noise, not cost).
    pin=()
    command -v taskset >/dev/null && pin=(taskset -c 3)
    for round in 1 2; do # twice, interleaved: the spread between rounds is the noise
        m=$(mark)
        run_to "$BL" 60 "${pin[@]}" "$B/bench/runtime_bench"
        since "$m" | grep -E '^\| [a-z_]' | sed "s/^/  xdev#$round /" | tee -a "$SUM"
        m=$(mark)
        run_to "$BL" 60 "${pin[@]}" "$B/bench/gpu/cuda_runtime_bench"
        since "$m" | grep -E '^\| [a-zA-Z]' | grep -v operation | sed "s/^/  raw#$round  /" |
            tee -a "$SUM"
    done
    # The few-ns overheads with both sides in one process, on one stream.
    m=$(mark)
    run_to "$BL" 60 "${pin[@]}" "$B/bench/gpu/runtime_pair_bench"
    since "$m" | grep -E '^(runtime_pair|\| [a-z])' | sed 's/^/  /' | tee -a "$SUM"
fi
if want bench-copy; then
    note "bench-copy:"
    m=$(mark)
    run_to "$BL" 120 "$B/bench/gpu/copy_bench" --sizes-mb 1,2,4,8,64,512 --reps 30
    since "$m" | grep -E '^\| (pinned|pageable)' | sed 's/^/  /' | tee -a "$SUM"
    # the small pageable sizes again with the staging off (the driver's own
    # copy: what xdev did below 16 MiB before), for the threshold's choice
    m=$(mark)
    XDEV_CUDA_STAGING=0 run_to "$BL" 60 "$B/bench/gpu/copy_bench" --sizes-mb 1,2,4,8 --reps 30 \
        --pageable-only
    since "$m" | grep -E '^\| pageable' | sed 's/^/  staging=0 /' | tee -a "$SUM"
    for t in 1 2 8; do
        m=$(mark)
        XDEV_CUDA_COPY_THREADS=$t run_to "$BL" 40 "$B/bench/gpu/copy_bench" --sizes-mb 256 \
            --reps 5 --pageable-only
        since "$m" | grep -E '^\| pageable' | sed "s/^/  threads=$t /" | tee -a "$SUM"
    done
    for kb in 1024 16384; do
        m=$(mark)
        XDEV_CUDA_STAGE_CHUNK_KB=$kb run_to "$BL" 40 "$B/bench/gpu/copy_bench" --sizes-mb 256 \
            --reps 5 --pageable-only
        since "$m" | grep -E '^\| pageable' | sed "s/^/  chunk=${kb}K /" | tee -a "$SUM"
    done
fi
if want capture; then
    run_to "$OUT/tests.log" 300 python3 bench/traces/capture.py bench/traces
    note "$(grep '^capture:' "$OUT/tests.log" | sed 's/^/  /')"
    mkdir -p "$OUT/traces" && cp bench/traces/*.csv.gz bench/traces/*.meta "$OUT/traces/" 2>/dev/null
fi
if want bench-alloc; then
    note "bench-alloc:"
    # c10's caching allocator from C++ (PyTorch of this machine)
    TORCH=$(python3 -c 'import torch,os;print(os.path.dirname(torch.__file__))' 2>/dev/null)
    ABI=$(python3 -c 'import torch;print(int(torch._C._GLIBCXX_USE_CXX11_ABI))' 2>/dev/null)
    C10=$B/c10_alloc_bench
    if [ -n "$TORCH" ] && run_to "$BL" 120 g++ -std=c++17 -O2 -pthread -D_GLIBCXX_USE_CXX11_ABI="${ABI:-1}" \
        -I"$TORCH/include" -I/usr/local/cuda/include -Iinclude -I"$B/include" bench/gpu/c10_alloc_bench.cpp \
        -L"$TORCH/lib" -lc10_cuda -lc10 -L/usr/local/cuda/lib64 -lcudart -Wl,-rpath,"$TORCH/lib" \
        -o "$C10"; then
        note "  c10 bench built against $TORCH ($(python3 -c 'import torch;print(torch.__version__)'))"
    else
        anchor_missing "bench-alloc: c10 bench NOT built (torch at '${TORCH}'): see bench.log"
        C10=
    fi
    m=$(mark)
    run_to "$BL" 90 "$B/bench/alloc_bench"
    if [ -n "$C10" ] && ! run_to "$BL" 90 "$C10" hot; then
        anchor_missing "bench-alloc: c10's hot pair did not run (rc $?): see bench.log"
    fi
    since "$m" | grep -E 'alloc_bench on|ns/pair|ns/step|peak reserved' | sed 's/^/  /' | tee -a "$SUM"
    # The 8-thread churn with one lock per device (no arenas) and with
    # expandable segments, for comparison.
    for conf in thread_arenas:1 expandable_segments:true; do
        m=$(mark)
        XDEV_ALLOC_CONF=$conf run_to "$BL" 90 "$B/bench/alloc_bench"
        since "$m" | grep -E 'ns/step' | sed "s/^/  [$conf] /" | tee -a "$SUM"
    done
    # Every allocator x trace in a fresh process, one harness (bench/replay_harness.h):
    # the shared traces (.traces/) and ours (bench/traces/).
    shopt -s nullglob
    TR=(.traces/*.csv.gz bench/traces/*.csv.gz)
    shopt -u nullglob
    if [ -e "${TR[0]}" ]; then
        m=$(mark)
        c10=()
        [ -n "$C10" ] && c10=(--c10 "$C10")
        # pinned to one core, the median of 15 warm passes, the median of 3
        # interleaved processes: a pass of the shortest trace lasts ~0.1 ms,
        # and single unpinned runs moved by 2x
        run_to "$BL" 500 taskset -c 3 python3 bench/replay_compare.py --warm-runs 15 --repeat 3 \
            --xdev "$B/bench/alloc_replay" --async "${c10[@]}" "${TR[@]}"
        since "$m" | grep -vE '^(\$|\[rc)' | sed 's/^/  /' | tee -a "$SUM"
    else
        note "  traces not found in .traces/ (copy ../shared/traces/*.csv.gz there): replay not run"
    fi
fi
if want bench-comm; then
    # all_reduce across the GPUs: xdev vs NCCL by hand, one loop (needs 2+ GPUs)
    m=$(mark)
    if [ -x "$B/bench/gpu/comm_bench" ]; then
        run_to "$BL" 240 "$B/bench/gpu/comm_bench"
        note "bench-comm:"
        since "$m" | grep -E '^(comm_bench|\|)' | sed 's/^/  /' | tee -a "$SUM"
    else
        anchor_missing "bench-comm: comm_bench (xdev vs NCCL by hand) not built (no nccl.h)"
    fi
fi

if want bench-comm-torch; then
    m=$(mark)
    XDEV_BACKEND=cuda PYTHONUNBUFFERED=1 run_to "$BL" 420 python3 bench/gpu/comm_torch.py \
        --lib "$B/lib/libxdev.so" ${XDEV_COMM_TORCH_ARGS:-}
    note "bench-comm-torch (rc $?):"
    since "$m" | grep -E '^(comm_torch|\||[a-z_]+ \()' | sed 's/^/  /' | tee -a "$SUM"
fi
if want bench-blas; then
    m=$(mark)
    run_to "$BL" 150 "$B/bench/gpu/gemm_bench" --sizes 4096,8192 --modes f32,tf32,bf16
    note "bench-blas (goal: ratio >= 0.98):"
    since "$m" | grep -E '^(gemm_bench|\| )' | sed 's/^/  /' | tee -a "$SUM"
fi
if want bench-fft; then
    m=$(mark)
    run_to "$BL" 120 "$B/bench/gpu/fft_overhead_bench"
    note "bench-fft (goal: overhead <= 1000 ns):"
    since "$m" | grep -E '^(fft_overhead|plan cache|\| )' | sed 's/^/  /' | tee -a "$SUM"
fi
if want heat; then
    note "heat (examples/heat, cuda vs cpu, same seed):"
    for side in cuda cpu; do
        flag=()
        [ "$side" = cpu ] && flag=(--disable-gpu)
        XDEV_BACKEND=cuda run_to "$OUT/heat-$side.log" 120 "$B/examples/heat" "${flag[@]}" \
            --n 512 --steps 2000 --report 250
    done
    python3 tests/gpu/heat_compare.py "$OUT/heat-cuda.log" "$OUT/heat-cpu.log" 2>&1 | sed 's/^/  /' |
        tee -a "$SUM"
fi
if want bench-kernel; then
    note "bench-kernel (goals: xdev <= raw + 100 ns per launch, triad ratio 1.00x):"
    if [ -x "$B/bench/gpu/kernel_launch_bench" ]; then
        # Every side pinned to the same core, as bench-runtime's.
        pin=()
        command -v taskset >/dev/null && pin=(taskset -c 3)
        m=$(mark)
        run_to "$BL" 120 "${pin[@]}" "$B/bench/gpu/kernel_launch_bench"
        since "$m" | grep -vE '^(\$ |\[rc )' | sed 's/^/  /' | tee -a "$SUM"
    else
        anchor_missing "bench-kernel: kernel_launch_bench (cuLaunchKernel side) not built (no CUDA driver library or no nvcc)"
    fi
    if [ -x "$B/bench/gpu/nvrtc_bench" ] && [ "${XDEV_GPU_KERNEL_RTC:-1}" = 1 ]; then
        m=$(mark)
        XDEV_BACKEND=cuda run_to "$BL" 120 "$B/bench/gpu/nvrtc_bench"
        since "$m" | grep -vE '^(\$ |\[rc )' | sed 's/^/  /' | tee -a "$SUM"
    fi
    for be in cuda cpu; do
        [ "${XDEV_GPU_KERNEL_RTC:-1}" = 1 ] || break
        m=$(mark)
        XDEV_BACKEND=$be run_to "$BL" 120 "$B/bench/kernel_rtc_bench"
        since "$m" | grep -vE '^(\$ |\[rc )' | sed 's/^/  /' | tee -a "$SUM"
    done
    m=$(mark)
    XDEV_BACKEND=cpu run_to "$BL" 150 "$B/bench/kernel_cpu_bench"
    note "bench-kernel on the host's CPU (kernel_cpu_bench, XDEV_BACKEND=cpu):"
    since "$m" | grep -vE '^(\$ |\[rc )' | sed 's/^/  /' | tee -a "$SUM"
fi
if want bench-barrier; then
    # Barrier kernels (issue 43): the block form, the fiber form and OpenMP on
    # this host's cores, each side a fresh process; then both forms on the GPU
    # (the same source: the block form must cost what the fiber form does).
    if [ -x "$B/bench/barrier_cpu_bench" ]; then
        m=$(mark)
        run_to "$BL" 200 "$B/bench/barrier_cpu_bench" --threads "$JOBS" --runs 3
        note "bench-barrier on the host's $JOBS cores (goal: block form <= 2x OpenMP):"
        since "$m" | grep -vE '^(\$ |\[rc )' | sed 's/^/  /' | tee -a "$SUM"
        m=$(mark)
        run_to "$BL" 120 "$B/bench/barrier_cpu_bench" --device cuda:0 --runs 5
        note "bench-barrier on cuda:0 (goal: block form >= 0.98x the fiber form's speed):"
        since "$m" | grep -vE '^(\$ |\[rc )' | sed 's/^/  /' | tee -a "$SUM"
    else
        note "bench-barrier: $B/bench/barrier_cpu_bench not built (no OpenMP?): not run"
    fi
fi
if want bench-graph; then
    note "bench-graph (goals: replay >= 5x less host time per step than eager on cuda, >= 2x on cpu;"
    note "  cuda replay within 5% of raw CUDA graphs; full tables in bench.log):"
    # The cuda sides pinned to one core, as bench-kernel's; the cpu run is not
    # (its stream worker and kernel threads need the other cores).
    pin=()
    command -v taskset >/dev/null && pin=(taskset -c 3)
    if [ -x "$B/bench/gpu/graph_raw_bench" ]; then
        m=$(mark)
        XDEV_BACKEND=cuda run_to "$BL" 150 "${pin[@]}" "$B/bench/gpu/graph_raw_bench" \
            --xdev "$B/bench/graph_bench"
        since "$m" | grep -vE '^(\$ |\[rc )' | sed 's/^/  /' | tee -a "$SUM"
    elif [ -x "$B/bench/graph_bench" ]; then
        anchor_missing "bench-graph: graph_raw_bench (raw CUDA graphs side) not built (no CUDA driver library, cuBLAS or nvcc)"
        m=$(mark)
        XDEV_BACKEND=cuda run_to "$BL" 120 "${pin[@]}" "$B/bench/graph_bench"
        since "$m" | grep -vE '^(\$ |\[rc )' | sed 's/^/  /' | tee -a "$SUM"
    else
        note "  $B/bench/graph_bench not built: not run"
    fi
    if [ -f bench/gpu/graph_torch.py ]; then
        m=$(mark)
        PYTHONUNBUFFERED=1 run_to "$BL" 150 "${pin[@]}" python3 bench/gpu/graph_torch.py
        since "$m" | grep -vE '^(\$ |\[rc )' | sed 's/^/  /' | tee -a "$SUM"
    fi
    if [ -x "$B/bench/graph_bench" ]; then
        note "bench-graph on the host's CPU (graph_bench, XDEV_BACKEND=cpu):"
        m=$(mark)
        XDEV_BACKEND=cpu run_to "$BL" 90 "$B/bench/graph_bench"
        since "$m" | grep -vE '^(\$ |\[rc )' | sed 's/^/  /' | tee -a "$SUM"
    fi
fi
if want observe; then
    OD=$OUT/observe
    for mode in example env; do
        run_to "$OUT/tests.log" 90 bash tests/observe/observe.sh "$mode" "$B" "$OD"
    done
    note "observe (cuda): $(grep -E '^(check_trace|observe.sh)' "$OUT/tests.log" | tail -4 | tr '\n' ' ')"
    run_to "$OUT/tests.log" 90 "$B/bench/memviz_bench" --segments 4000 --history 100000 --out /tmp/xdev-big
    note "$(grep '^memviz_bench' "$OUT/tests.log" | tail -1)"
    rm -f /tmp/xdev-big.html /tmp/xdev-big.json
fi
if want scan-scaling && [ -x "$B/bench/prim_bench" ]; then
    PL=$OUT/scan-scaling.log
    note "scan-scaling (cpu:0 f32, 2^24 and 2^26; GB/s of reduce and scan, and the copy's):"
    # XDEV_GPU_SCAN_ISAS and XDEV_GPU_SCAN_THREADS narrow the runs
    for isa in ${XDEV_GPU_SCAN_ISAS:-auto baseline avx2 avx2-cached}; do
        for t in ${XDEV_GPU_SCAN_THREADS:-1 2 4 8 $JOBS}; do
            pm=$(wc -l <"$PL" 2>/dev/null || echo 0)
            XDEV_CPU_SCAN_ISA=$isa run_to "$PL" 60 "$B/bench/prim_bench" --device cpu:0 --threads "$t" \
                --min-log2 24 --max-log2 26 --runs 1 --reps 5 --sort-log2 16
            tail -n +$((pm + 1)) "$PL" | grep -E '^\| (reduce|scan) ' | awk -v t="$t" -v i="$isa" \
                -F'|' '{printf "  %-8s threads %2d %s %s GB/s (copy %s)\n", i, t, $2 $3, $4, $5}' | tee -a "$SUM"
        done
    done
fi
if want managed; then
    if [ -x "$B/bench/managed_bench" ]; then
        note "managed (issue 46: a kernel over prefetched managed memory >= 0.95x of device memory):"
        m=$(mark)
        XDEV_BACKEND=cuda run_to "$BL" 120 "$B/bench/managed_bench" --mb 1024
        since "$m" | grep -vE '^(\$ |\[rc )' | sed 's/^/  /' | tee -a "$SUM"
    else
        note "managed: $B/bench/managed_bench not built: not run"
    fi
fi
if want bench-shadow; then
    if [ -x "$B/bench/shadow_bench" ]; then
        note "bench-shadow (us per call on cuda:0: the shadow off, XDEV_SHADOW=cpu, COMPARE=sync):"
        for how in off op sync; do
            m=$(mark)
            case $how in
            off) XDEV_BACKEND=cuda run_to "$BL" 60 "$B/bench/shadow_bench" ;;
            op) XDEV_BACKEND=cuda XDEV_SHADOW=cpu run_to "$BL" 120 "$B/bench/shadow_bench" ;;
            sync) XDEV_BACKEND=cuda XDEV_SHADOW=cpu XDEV_SHADOW_COMPARE=sync run_to "$BL" 120 \
                "$B/bench/shadow_bench" ;;
            esac
            since "$m" | grep -vE '^(\$ |\[rc )' | sed 's/^/  /' | tee -a "$SUM"
        done
    else
        note "bench-shadow: $B/bench/shadow_bench not built: not run"
    fi
fi
if want sleep-wake; then
    GIB=${XDEV_SLEEP_GIB:-40}
    if [ -x "$B/bench/sleep_wake_bench" ]; then
        note "sleep-wake (sleep keep + wake of $GIB GiB on cuda:0; goals: >= 0.9x of pinned copies"
        note "  each way, free memory while asleep within 1% of before the allocations):"
        m=$(mark)
        XDEV_BACKEND=cuda XDEV_ALLOC_CONF=expandable_segments:true run_to "$BL" 300 \
            "$B/bench/sleep_wake_bench" --device cuda:0 --gib "$GIB" --tags 8 --cycles 4
        since "$m" | grep -vE '^(\$ |\[rc )' | sed 's/^/  /' | tee -a "$SUM"
    else
        note "sleep-wake: $B/bench/sleep_wake_bench not built: not run"
    fi
fi
if want bench-trace; then
    note "bench-trace (runtime_bench --reps 11 --ops 2000, ns per call; tracer compiled out / in and off / on):"
    NT=$B-notracer
    gen=()
    command -v ninja >/dev/null && gen=(-G Ninja)
    run_to "$BL" 150 cmake -S . -B "$NT" "${gen[@]}" -DCMAKE_BUILD_TYPE=Release -DXDEV_TRACER=OFF \
        -DXDEV_BUILD_TESTS=OFF -DXDEV_BUILD_EXAMPLES=OFF &&
        run_to "$BL" 200 cmake --build "$NT" -j "$JOBS" --target runtime_bench xdev-cuda
    pin=()
    command -v taskset >/dev/null && pin=(taskset -c 3)
    for round in 1 2; do
        for side in notracer off on; do
            m=$(mark)
            case $side in
            notracer) run_to "$BL" 60 "${pin[@]}" "$NT/bench/runtime_bench" --reps 11 --ops 2000 ;;
            off) run_to "$BL" 60 "${pin[@]}" "$B/bench/runtime_bench" --reps 11 --ops 2000 ;;
            on) XDEV_TRACE_FILE=/tmp/xdev-rt-trace.json run_to "$BL" 90 "${pin[@]}" \
                "$B/bench/runtime_bench" --reps 11 --ops 2000 ;;
            esac
            since "$m" | grep -E '^\| (launch_host_func \(no-op\), per|event_record  |event_record \+|stream_query)' |
                sed "s/^/  $side#$round /" | tee -a "$SUM"
        done
    done
    rm -f /tmp/xdev-rt-trace.json
fi
if want bench-ops; then
    note "bench-ops (goal: >= 0.9x of memset / copy for 4-byte types at 256 MiB):"
    # the CPU at 1, 16 and 256 MiB: a core's share in its L2, in the L3,
    # past it (the fills choose their stores by size; XDEV_GPU_OPS_CPU_MB)
    for run in cuda:256 ${XDEV_GPU_OPS_CPU_MB:-1 16 256}; do
        be=cpu mb=$run
        [ "${run%%:*}" = cuda ] && be=cuda mb=${run#cuda:}
        m=$(mark)
        check=4194304
        [ "$be" = cpu ] && check=0
        XDEV_BACKEND=$be run_to "$BL" 120 "$B/bench/ops_bench" --mb "$mb" --reps 11 --check $check
        since "$m" | grep -E '^\| |ops_bench on|bit identity|MISMATCH' | sed "s/^/  $be ${mb}MiB /" |
            tee -a "$SUM"
    done
fi
if want bench-prim; then
    # Parallel primitives (issue 44), each side a fresh process: on cuda:0 xdev,
    # xdev deterministic and CUB called directly (goals: >= 0.95x CUB, the
    # deterministic reduce <= 1.25x the ordinary one's time); on the host's
    # cores the CPU backend against the same run's copy and __gnu_parallel::sort.
    # prim_bench exits 3 when an anchor side is not built, 1 when a side failed.
    PL=$OUT/bench-prim.log
    if [ -x "$B/bench/prim_bench" ]; then
        note "bench-prim (goals: cuda xdev >= 0.95x CUB, deterministic reduce <= 1.25x; cpu reduce"
        note "  >= 0.8x and scan >= 0.6x the copy's bytes/s, sort >= 1x __gnu_parallel::sort):"
        # XDEV_GPU_PRIM_SPECS narrows the devices, XDEV_GPU_PRIM_ARGS adds
        # prim_bench options (e.g. "--prims select_if") to every run
        read -r -a extra <<<"${XDEV_GPU_PRIM_ARGS:-}"
        for spec in ${XDEV_GPU_PRIM_SPECS:-cuda:0 cpu:0 cpu:0:f64 cpu:0:i32 cpu:0:i64}; do
            dev=${spec%:*}
            args=()
            case $spec in
            cpu:0:*) dev=cpu:0 args=(--dtype "${spec##*:}" --sort-log2 16) ;;
            *) dev=$spec ;;
            esac
            pm=$(wc -l <"$PL" 2>/dev/null || echo 0)
            run_to "$PL" 420 "$B/bench/prim_bench" --device "$dev" --threads "$JOBS" "${args[@]}" \
                "${extra[@]}"
            rc=$?
            tail -n +$((pm + 1)) "$PL" | grep -E '^\| |ANCHOR|bits|FAILED|not compared|not on' |
                sed "s/^/  $dev /" | tee -a "$SUM"
            if [ "$rc" -eq 3 ]; then
                anchor_missing "bench-prim on $dev: an anchor side (CUB or __gnu_parallel::sort) not built"
            elif [ "$rc" -ne 0 ]; then
                anchor_missing "bench-prim on $dev: prim_bench failed (rc $rc; bench-prim.log)"
            fi
        done
    else
        anchor_missing "bench-prim: $B/bench/prim_bench not built"
    fi
fi
if want tf32; then
    m=$(mark)
    run_to "$BL" 150 "$B/bench/gpu/tf32_bench" --n 10240 --reps 5
    note "tf32 (the seed's experiment):"
    since "$m" | grep -E '^(tf32_bench|\| |speed-up)' | sed 's/^/  /' | tee -a "$SUM"
fi
if want rng; then
    note "rng:"
    if [ -x "$B/bench/rng_bench" ]; then
        m=$(mark)
        run_to "$BL" 90 "$B/bench/rng_bench"
        since "$m" | sed 's/^/  /' | tail -n 30 | tee -a "$SUM"
        # the CPU backend on this host's cores: each fill against the same
        # run's device copy (issue 50 item 4: normal f32 >= 0.6x), 256 MiB
        m=$(mark)
        XDEV_BACKEND=cpu run_to "$BL" 120 "$B/bench/rng_bench" 67108864 5
        since "$m" | sed 's/^/  /' | tail -n 30 | tee -a "$SUM"
    else
        note "  $B/bench/rng_bench not built: not run"
    fi
    if [ -f bench/gpu/rng_torch.py ]; then
        m=$(mark)
        PYTHONUNBUFFERED=1 run_to "$BL" 90 python3 bench/gpu/rng_torch.py
        since "$m" | sed 's/^/  /' | tail -n 30 | tee -a "$SUM"
    else
        note "  bench/gpu/rng_torch.py not present: not run"
    fi
fi
unset XDEV_BACKEND

# ---------------------------------------------------------------- compute-sanitizer
SAN=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
sanitize() { # TOOL NAME CMD...   (SAN_ARGS: more compute-sanitizer options)
    local tool=$1 name=$2 start summary
    shift 2
    start=$(wc -l <"$OUT/sanitizer.log" 2>/dev/null || echo 0)
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

note "total ${SECONDS}s"
if [ "${#ANCHORS_MISSING[@]}" -gt 0 ]; then
    note "FAILED: ${#ANCHORS_MISSING[@]} benchmark anchor side(s) missing, their comparisons are empty:"
    for a in "${ANCHORS_MISSING[@]}"; do note "  - $a"; done
fi
echo
echo "================ summary"
cat "$SUM"
[ "${#ANCHORS_MISSING[@]}" -eq 0 ]
