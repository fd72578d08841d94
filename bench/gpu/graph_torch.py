#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""bench/gpu/graph_torch.py - the graph benchmark's step (bench/graph_step.h)
as torch ops on the GPU: eager vs a torch.cuda.CUDAGraph replaying it, host
time per step, for reading next to bench/gpu/graph_raw_bench (xdev eager and
replay, raw CUDA eager and graphs).

The step is the same sequence of the same shapes, one torch op per xdev op:
R[:n].uniform_() (torch's Philox fill), torch.mm(A, GB, out=GC) (g x g x g
f32, TF32 allowed as xdev's default), 98 y.lerp_(x, 0.5) and 96 y.mul_(0.9)
on 8 buffers of n floats (one elementwise kernel each), and 4 device copies
(y.copy_(x): cudaMemcpyAsync), in graph_step.h's order, on one created
stream. Modes, each in a fresh Python process, rounds interleaved:
  eager   the step's 200 torch calls, each step
  graph   the step captured once (warm-up on a side stream, then
          torch.cuda.graph(g): global capture mode, torch's default), then
          one g.replay() per step (torch's replay also refills the RNG
          seed/offset it hands to the captured fill: fresh numbers each step)
Timing, as bench_util.h's bench_batches: one untimed warm-up batch, then
--reps batches of --steps steps; host = time.perf_counter_ns() around the
enqueue loop only, a stream synchronize after each batch untimed; wall = the
same loop with the synchronize timed; median / min / max in us per step.

This is PyTorch's own harness for its own side, in Python: the host time
per step includes the interpreter and torch's dispatcher on every call (for
eager), or one Python call of g.replay() and torch's replay prologue (for
the graph). It is what a PyTorch user pays, not a measurement through
xdev's C harness: compare its eager / graph ratio, and its replay's host
time, with xdev's as orders of magnitude, not as a same-harness result.

    python3 bench/gpu/graph_torch.py [--n 1048576] [--gemm 256] [--steps 4]
                                     [--reps 31] [--rounds 2]

Prints a note and exits 0 where torch or a CUDA device is missing.
"""
import argparse
import statistics
import subprocess
import sys
import time

BUFS = 8
OPS = 200
LERP_W = 0.5
SCALE_S = 0.9
SEED = 20261127


def op_at(i):
    """Operation i of the step: graph_step.h's gs_op_at, as (kind, dst, src);
    buffers 0..7 are B0..B7, 8 is R."""
    if i == 0:
        return ("rand", BUFS, None)
    if i == 1:
        return ("gemm", None, None)
    j = i - 2
    if j % 50 == 25:
        c = j // 50
        return ("copy", 0 if c == 0 else c + 4, BUFS if c == 0 else c)
    k = j - (j + 24) // 50
    if (k // BUFS) % 2 == 0:
        return ("lerp", k % BUFS, (k + 3) % BUFS)
    return ("scale", k % BUFS, None)


def inputs(torch, n, g, dev):
    """graph_step.h's gs_input for every operand, as device tensors."""
    rl = max(n, g * g)
    i_n = torch.arange(n, dtype=torch.int64)
    bufs = [(((i_n * 7 + b * 13) % 101).float() / 101.0).to(dev) for b in range(BUFS)]
    r = ((torch.arange(rl, dtype=torch.int64) % 97).float() / 97.0).to(dev)
    gb = (((torch.arange(g * g, dtype=torch.int64) % 89) - 44).float() / 89.0).to(dev)
    gc = torch.zeros(g * g, dtype=torch.float32, device=dev)
    return bufs, r, gb, gc


def build_step(torch, bufs, r, gb, gc, n, g):
    """The step as a list of (callable, args): views made once, so a step is
    200 calls and nothing else."""
    rn = r[:n]
    a = r[: g * g].view(g, g)
    b = gb.view(g, g)
    c = gc.view(g, g)
    ops = []
    for i in range(OPS):
        kind, dst, src = op_at(i)
        if kind == "rand":
            ops.append((rn.uniform_, ()))
        elif kind == "gemm":
            ops.append((lambda: torch.mm(a, b, out=c), ()))
        elif kind == "lerp":
            ops.append((bufs[dst].lerp_, (bufs[src], LERP_W)))
        elif kind == "scale":
            ops.append((bufs[dst].mul_, (SCALE_S,)))
        else:
            ops.append((bufs[dst].copy_, (rn if src == BUFS else bufs[src],)))
    assert len(ops) == OPS

    def step():
        for f, args in ops:
            f(*args)

    return step


def batches(batch, settle, steps, reps):
    """bench_batches: a warm-up batch, then reps timed batches (settle, if
    any, after each, untimed); ns per step: (median, min, max)."""
    batch()
    if settle:
        settle()
    v = []
    for _ in range(reps):
        t0 = time.perf_counter_ns()
        batch()
        t1 = time.perf_counter_ns()
        if settle:
            settle()
        v.append((t1 - t0) / steps)
    return statistics.median(v), min(v), max(v)


def snapshot(torch, bufs, r, gb, gc):
    return torch.cat([*bufs, r, gb, gc]).cpu()


def side(torch, opt):
    dev = torch.device("cuda")
    torch.backends.cuda.matmul.allow_tf32 = True
    n, g = opt.n, opt.gemm
    print(f"@device {torch.cuda.get_device_name(dev)}, torch {torch.__version__}")
    stream = torch.cuda.Stream()
    with torch.cuda.stream(stream):
        bufs, r, gb, gc = inputs(torch, n, g, dev)
        step = build_step(torch, bufs, r, gb, gc, n, g)
        graph = None
        if opt.side in ("graph", "verify"):
            # torch's rule: warm up on a side stream before capturing.
            side_stream = torch.cuda.Stream()
            side_stream.wait_stream(stream)
            with torch.cuda.stream(side_stream):
                for _ in range(3):
                    step()
            stream.wait_stream(side_stream)
            graph = torch.cuda.CUDAGraph()
            t0 = time.perf_counter_ns()
            with torch.cuda.graph(graph):
                step()
            print(f"@capture {(time.perf_counter_ns() - t0) * 1e-6:.3f}")
        if opt.side == "verify":
            return verify(torch, opt, stream, step, graph, (bufs, r, gb, gc))

        def run():
            for _ in range(opt.steps):
                step()

        def replay():
            for _ in range(opt.steps):
                graph.replay()

        batch = replay if graph is not None else run

        def batch_sync():
            batch()
            stream.synchronize()

        h = batches(batch, stream.synchronize, opt.steps, opt.reps)
        w = batches(batch_sync, None, opt.steps, opt.reps)
        print(f"@host {h[0]:.1f} {h[1]:.1f} {h[2]:.1f}")
        print(f"@wall {w[0]:.1f} {w[1]:.1f} {w[2]:.1f}")
        x = snapshot(torch, bufs, r, gb, gc)
        sub = int(((x.abs() < torch.finfo(torch.float32).tiny) & (x != 0)).sum())
        bad = int((~torch.isfinite(x)).sum())
        print(f"@health {sub} {bad}")
    return 0


def verify(torch, opt, stream, step, graph, tensors):
    """Informational: two replays vs two eager steps from the same inputs and
    seed (torch does not promise that graphs draw what eager fills would)."""
    bufs, r, gb, gc = tensors
    fresh = inputs(torch, opt.n, opt.gemm, torch.device("cuda"))

    def reset():
        for t, f in zip([*bufs, r, gb, gc], [*fresh[0], fresh[1], fresh[2], fresh[3]]):
            t.copy_(f)
        stream.synchronize()

    reset()
    torch.manual_seed(SEED)
    step()
    step()
    stream.synchronize()
    eager = snapshot(torch, bufs, r, gb, gc)
    reset()
    torch.manual_seed(SEED)
    graph.replay()
    graph.replay()
    stream.synchronize()
    rep = snapshot(torch, bufs, r, gb, gc)
    gg = opt.gemm * opt.gemm
    same = torch.equal(eager[:-gg], rep[:-gg])
    diff = float((eager - rep).abs().max())
    print(f"@verify 2 replays {'==' if same else 'NOT =='} 2 eager steps, bitwise, every buffer "
          f"but the GEMM's output; max |eager - replay| over all {diff:.3g}")
    return 0


def run_side(opt, name):
    """One mode in a fresh Python process; its '@' lines as {key: text}."""
    cmd = [sys.executable, __file__, "--side", name, "--n", str(opt.n), "--gemm", str(opt.gemm),
           "--steps", str(opt.steps), "--reps", str(opt.reps)]
    p = subprocess.run(cmd, stdout=subprocess.PIPE, text=True)
    out = {}
    for line in p.stdout.splitlines():
        if line.startswith("@"):
            key, _, text = line[1:].partition(" ")
            out[key] = text
        else:
            print(line)
    if p.returncode != 0:
        print(f"side {name} FAILED (exit status {p.returncode}; its message is above)")
        out["failed"] = "1"
    return out


def nums(text):
    return [float(x) for x in text.split()]


def parent(opt):
    v = run_side(opt, "verify")
    modes = ("eager", "graph")
    res = [[run_side(opt, m) for m in modes] for _ in range(opt.rounds)]
    print(f"graph_torch: {v.get('device', '?')}; each mode a fresh process, "
          f"{opt.rounds} rounds interleaved")
    print(f"step: {OPS} torch calls = 194 elementwise kernels of {opt.n} floats (lerp_, mul_), "
          f"4 copy_, 1 mm {opt.gemm}^3 f32 (TF32), 1 uniform_ of {opt.n} floats; one stream")
    print(f"capture (ms): {v.get('capture', '?')}; verify: {v.get('verify', 'FAILED')}")
    print(f"\nus per step: host = the enqueue loop of {opt.steps} steps only (a synchronize "
          f"after it, untimed); wall = with the synchronize; median / min / max of "
          f"{opt.reps} batches")
    print(f"| {'mode':<12} | {'round':>5} | {'host med':>10} | {'host min':>10} | "
          f"{'host max':>10} | {'wall med':>12} |")
    print("|--------------|-------|------------|------------|------------|--------------|")
    ok = True
    for rnd, row in enumerate(res):
        for m, out in zip(modes, row):
            if "failed" in out or "host" not in out or "wall" not in out:
                print(f"| torch {m:<6} | {rnd + 1:>5} | {'FAILED':>10} | {'':>10} | {'':>10} | "
                      f"{'':>12} |")
                ok = False
                continue
            h, w = nums(out["host"]), nums(out["wall"])
            print(f"| torch {m:<6} | {rnd + 1:>5} | {h[0] * 1e-3:10.2f} | {h[1] * 1e-3:10.2f} | "
                  f"{h[2] * 1e-3:10.2f} | {w[0] * 1e-3:12.2f} |")
    ratios = []
    for row in res:
        try:
            ratios.append(nums(row[0]["host"])[0] / nums(row[1]["host"])[0])
        except (KeyError, ZeroDivisionError, IndexError):
            ratios.append(None)
    text = " ".join("-" if q is None else f"{q:.2f}" for q in ratios)
    print(f"host time per step, torch eager / torch graph, of the medians, by round: {text}")
    print(f"@torch_ratio {text}")
    for i, m in enumerate(modes):
        vals = " ".join(f"{nums(row[i]['host'])[0] * 1e-3:.2f}" if "host" in row[i] else "-"
                        for row in res)
        print(f"@torch_{m}_host_us {vals}")
    return 0 if ok else 1


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=1 << 20)
    ap.add_argument("--gemm", type=int, default=256)
    ap.add_argument("--steps", type=int, default=4)
    ap.add_argument("--reps", type=int, default=31)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--side", default="")
    opt = ap.parse_args()
    try:
        import torch
    except ImportError:
        print("graph_torch: torch is not installed: not run")
        return 0
    if not torch.cuda.is_available():
        print("graph_torch: no CUDA device for torch: not run")
        return 0
    if opt.side:
        return side(torch, opt)
    return parent(opt)


if __name__ == "__main__":
    sys.exit(main())
