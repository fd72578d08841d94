#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# tests/gpu/run.sh - build xdev on a GPU machine and run everything that needs
# the GPU, in steps (XDEV_GPU_STEPS, commas or spaces; default: all but the
# optional ones):
#   build          Release build with -DXDEV_WERROR=ON (retried with OFF)
#   conformance    ctest -L conformance in the same build: the backend-generic
#                  suites on cuda and on cpu in one run (XT_REQUIRE_BACKENDS
#                  =cpu,cuda: an unusable cuda fails instead of skipping;
#                  XDEV_GPU_CONFORMANCE_REGEX narrows it, as ctest -R;
#                  XDEV_GPU_CONFORMANCE_S bounds it, default 300 s, and
#                  XDEV_GPU_CONFORMANCE_JOBS is ctest -j, default 4; a run
#                  stopped at the bound is named INCOMPLETE)
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
#                  STREAM triad GB/s), each side a fresh process, and the
#                  goal's measure in one process (raw, xdev and a second raw
#                  stream in one loop: --side pair); then
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
#                  fresh process, raw graphs twice a round: an A/A control of
#                  the harness, and the replay's ratio pooled over the rounds;
#                  graph_bench's verify checks replay == eager
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
# This file holds the settings, the helpers, the build and the hip-nv steps;
# the other steps are in steps_tests.sh, steps_bench.sh and steps_sanitize.sh
# beside it, sourced in that order.
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
# The core the pinned benchmarks run on (every side of a comparison the same): the fourth CPU
# of GPU 0's local_cpulist in sysfs (core 3 where that cannot be read, and on a host whose
# GPU 0 is local to CPUs 0-N), so that a host of several NUMA nodes measures host time near
# the GPU rather than wherever core 3 lies.
cpu_list_expand() { # "0-3,8" -> one CPU a line
    local IFS=, r
    for r in $1; do
        if [[ $r == *-* ]]; then seq "${r%-*}" "${r#*-}"; else echo "$r"; fi
    done
}
gpu0_cpulist() {
    local bus
    bus=$(nvidia-smi --query-gpu=pci.bus_id --format=csv,noheader -i 0 2>/dev/null | head -1)
    bus=$(tr 'A-F' 'a-f' <<<"${bus: -12}") # 00000000:19:00.0 -> 0000:19:00.0
    cat "/sys/bus/pci/devices/$bus/local_cpulist" 2>/dev/null
}
GPU0_CPUS=$(gpu0_cpulist)
PIN_CPU=$(cpu_list_expand "$GPU0_CPUS" 2>/dev/null | sed -n 4p)
[ -n "$PIN_CPU" ] || PIN_CPU=$(cpu_list_expand "$GPU0_CPUS" 2>/dev/null | sed -n 1p)
[[ "$PIN_CPU" =~ ^[0-9]+$ ]] && [ "$PIN_CPU" -lt "$(nproc)" ] || PIN_CPU=3
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
note "pinned benchmarks run on core $PIN_CPU (GPU 0's local CPUs: ${GPU0_CPUS:-unknown})"

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

# The steps, in this order (each file skips the steps not wanted).
HERE=tests/gpu # the cd above put us in the repository root
for part in steps_tests steps_bench steps_sanitize; do
    # shellcheck source=/dev/null
    source "$HERE/$part.sh"
done

note "total ${SECONDS}s"
if [ "${#ANCHORS_MISSING[@]}" -gt 0 ]; then
    note "FAILED: ${#ANCHORS_MISSING[@]} benchmark anchor side(s) missing, their comparisons are empty:"
    for a in "${ANCHORS_MISSING[@]}"; do note "  - $a"; done
fi
echo
echo "================ summary"
cat "$SUM"
[ "${#ANCHORS_MISSING[@]}" -eq 0 ]
