#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# tests/rendezvous_launchers.sh LAUNCHER PROGRAM N [TYPE [MODE]] - start N ranks of
# PROGRAM (tests/rendezvous_rank.c) with a real launcher and check that every
# rank reported "ok":
#   mpirun    Open MPI's mpirun -n N --oversubscribe (as root also
#             --allow-run-as-root), ranks on this host: no address needed
#   torchrun  torchrun --nproc-per-node=N --no-python (PyTorch's launcher;
#             TYPE cuda on a GPU machine)
# With XDEV_HOST_COMM=<transport> set, every rank must also say it ran over
# it ("over mpi"; not checked in abort mode). In die mode a survivor says
# "ok" only when it named the rank that left, with the transport's status,
# within the bound (rendezvous_rank.c). Exits 77 (skipped, the reason
# printed) when the launcher is not installed.
set -uo pipefail
launcher=$1 prog=$2 n=$3 type=${4:-cpu} mode=${5:-}
case "$launcher" in
mpirun)
    if ! command -v mpirun >/dev/null 2>&1; then
        echo "SKIP: mpirun not installed (Debian: openmpi-bin)"
        exit 77
    fi
    extra=(--oversubscribe)
    [ "$(id -u)" = 0 ] && extra+=(--allow-run-as-root)
    # A rank of an MPI job that ends without MPI_Finalize makes mpirun end the
    # whole job at once (its own report); the die test is about xdev's report,
    # so mpirun is asked to let the survivors run (also for an aborted group,
    # whose ranks leave requests MPI never completes and skip MPI_Finalize).
    case "$mode" in die | abort) extra+=(--mca orte_allowed_exit_without_sync 1) ;; esac
    # A rank leaving through _exit would first sleep ThreadSanitizer's
    # atexit_sleep_ms (1 s) while still alive, which is no part of how soon
    # the others notice it is gone (no effect in other builds).
    [ "$mode" = die ] && export TSAN_OPTIONS="${TSAN_OPTIONS:-} atexit_sleep_ms=0"
    # "kill": the leaving rank is SIGKILLed instead; mpirun would end the job
    # at once, unless told to let the others run (--enable-recovery).
    if [ "$mode" = kill ]; then
        extra+=(--enable-recovery)
        export XT_DIE_BY_SIGNAL=1
        mode=die
    fi
    out=$(timeout 120 mpirun -n "$n" "${extra[@]}" "$prog" "$type" $mode 2>&1)
    rc=$?
    ;;
torchrun)
    if ! command -v torchrun >/dev/null 2>&1; then
        echo "SKIP: torchrun not installed (PyTorch)"
        exit 77
    fi
    out=$(timeout 300 torchrun --nproc-per-node="$n" --no-python "$prog" "$type" $mode 2>&1)
    rc=$?
    ;;
*)
    echo "usage: $0 mpirun|torchrun PROGRAM N [cpu|cuda]" >&2
    exit 2
    ;;
esac
echo "$out"
oks=$(grep -c ", ok$" <<<"$out")
want=${XDEV_HOST_COMM:-auto}
if [ "$want" != auto ] && { [ -z "$mode" ] || [ "$mode" = die ]; }; then
    overs=$(grep ", ok$" <<<"$out" | grep -c " over $want")
    # In die mode the rank that leaves says no transport; every other must.
    [ "$mode" = die ] && overs=$((overs + $(grep -c "leaves without joining.*, ok$" <<<"$out")))
    oks=$overs
fi
if [ "$rc" -ne 0 ] || [ "$oks" -ne "$n" ]; then
    echo "FAIL: $launcher exit $rc, $oks of $n ranks ok"
    exit 1
fi
echo "PASS: $launcher started $n ranks, every rank ok${mode:+ ($mode)}"
