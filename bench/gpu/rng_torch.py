#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""bench/gpu/rng_torch.py - torch's random fill throughput on the GPU, for
side-by-side reading with build/bench/rng_bench (same kinds, same default
size: 2^26 elements, GB/s of output, best of 10; timed with CUDA events).

    python3 bench/gpu/rng_torch.py [elements] [reps]

Prints a note and exits 0 where torch or a CUDA device is missing.
"""
import sys


def main() -> int:
    try:
        import torch
    except ImportError:
        print("rng_torch: torch is not installed: not run")
        return 0
    if not torch.cuda.is_available():
        print("rng_torch: no CUDA device for torch: not run")
        return 0
    n = int(sys.argv[1], 0) if len(sys.argv) > 1 else 1 << 26
    reps = int(sys.argv[2]) if len(sys.argv) > 2 else 10
    dev = torch.device("cuda")
    f32 = torch.empty(n, dtype=torch.float32, device=dev)
    f64 = torch.empty(n, dtype=torch.float64, device=dev)
    i32 = torch.empty(n, dtype=torch.int32, device=dev)
    i64 = torch.empty(n, dtype=torch.int64, device=dev)
    # The same parameters as rng_bench: normal(0, 1), integers in
    # [-1000, 1000000), bernoulli(0.5).
    fills = [
        ("uniform f32", f32, lambda: f32.uniform_()),
        ("uniform f64", f64, lambda: f64.uniform_()),
        ("normal f32", f32, lambda: f32.normal_()),
        ("normal f64", f64, lambda: f64.normal_()),
        ("integers int32", i32, lambda: i32.random_(-1000, 1000000)),
        ("integers int64", i64, lambda: i64.random_(-1000, 1000000)),
        ("bernoulli f32", f32, lambda: f32.bernoulli_(0.5)),
    ]
    name = torch.cuda.get_device_name(dev)
    print(f"rng_torch: torch {torch.__version__} on {name}, {n} elements, best of {reps}")
    print(f"{'fill':<16} {'MB':>12} {'torch GB/s':>12}")
    start = torch.cuda.Event(enable_timing=True)
    end = torch.cuda.Event(enable_timing=True)
    for label, t, fill in fills:
        nbytes = t.numel() * t.element_size()
        fill()  # warm up
        torch.cuda.synchronize()
        best = float("inf")
        for _ in range(reps):
            start.record()
            fill()
            end.record()
            end.synchronize()
            best = min(best, start.elapsed_time(end) / 1e3)
        print(f"{label:<16} {nbytes / 1e6:12.1f} {nbytes / best / 1e9:12.2f}")
    # torch.rand (a fresh tensor: allocation from torch's cache included).
    torch.rand(n, device=dev)
    torch.cuda.synchronize()
    best = float("inf")
    for _ in range(reps):
        start.record()
        torch.rand(n, device=dev)
        end.record()
        end.synchronize()
        best = min(best, start.elapsed_time(end) / 1e3)
    print(f"{'torch.rand f32':<16} {n * 4 / 1e6:12.1f} {n * 4 / best / 1e9:12.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
