#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""replay_compare.py - allocators side by side on allocation traces, each allocator x trace in
a fresh process (an allocator's state - its cache, its growth policy's high-water mark - never
carries from one trace to the next), all driven by the one harness (bench/replay_harness.h).

  replay_compare.py --xdev build/bench/alloc_replay [--c10 c10_alloc_bench] [--async]
                    [--warm-runs N] [--repeat R] TRACE.csv[.gz]...

With --repeat R each allocator x trace runs R times, interleaved with the others, and each
round starts with the next allocator in turn; warm and cold ns are the medians.

Allocators: xdev's default policy, xdev with trim_before_grow:false (torch's growth), xdev
with expandable_segments:true, with --async xdev's backend:async (cudaMallocAsync on CUDA), with --c10 PyTorch's c10 caching
allocator (and c10 with PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True). Prints per trace: streams, warm and cold ns per event, peak allocated and reserved,
reserved - allocated at peak, the peak reserved over the whole run (warm passes included) and
the first warm pass that raised it, backend calls in all warm passes and in the last one,
retries; ratios against c10 where it ran. Exit status 1 when any run failed (its message is printed)."""
import argparse
import os
import subprocess
import sys


def run(cmd, env_extra):
    env = dict(os.environ)
    env.pop("XDEV_ALLOC_CONF", None)
    env.update(env_extra)
    p = subprocess.run(cmd, env=env, capture_output=True, text=True)
    rows = [l.split("\t") for l in p.stdout.splitlines() if l.startswith("replay\t")]
    if p.returncode != 0 or len(rows) != 1:
        sys.stderr.write(f"replay_compare: {' '.join(cmd)} failed ({p.returncode}):\n{p.stderr}")
        return None
    r = rows[0]
    out = {"alloc": r[1], "trace": r[2], "events": int(r[3]), "streams": int(r[4]),
           "cold": float(r[5]), "warm": float(r[6]), "palloc": float(r[7]),
           "presv": float(r[8]), "cold_calls": int(r[9]), "warm_calls": int(r[10]),
           "retries": int(r[11]), "last_calls": int(r[12])}
    # the whole run's peaks and the first warm pass that grew the reservation
    # (older builds of a side print without them: the cold pass's then)
    out["run_alloc"] = float(r[13]) if len(r) > 15 else out["palloc"]
    out["run_resv"] = float(r[14]) if len(r) > 15 else out["presv"]
    out["grew"] = int(r[15]) if len(r) > 15 else 0
    return out


def meta(path):
    base = path[:-3] if path.endswith(".gz") else path
    base = base[:-4] if base.endswith(".csv") else base
    out = {}
    try:
        for line in open(base + ".meta"):
            k, _, v = line.partition(" ")
            out[k] = v.strip()
    except OSError:
        pass
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--xdev", required=True)
    ap.add_argument("--c10")
    ap.add_argument("--async", dest="use_async", action="store_true")
    ap.add_argument("--warm-runs", type=int, default=5)
    ap.add_argument("--repeat", type=int, default=1,
                    help="fresh processes per allocator x trace, interleaved; warm and cold ns "
                         "are the median over them")
    ap.add_argument("traces", nargs="+")
    a = ap.parse_args()
    w = ["--warm-runs", str(a.warm_runs)]
    sides = [("xdev", [a.xdev] + w, {}),
             ("xdev trim_before_grow:false", [a.xdev] + w,
              {"XDEV_ALLOC_CONF": "trim_before_grow:false"})]
    sides.append(("xdev expandable_segments", [a.xdev] + w,
                  {"XDEV_ALLOC_CONF": "expandable_segments:true"}))
    if a.use_async:
        sides.append(("xdev backend:async", [a.xdev] + w, {"XDEV_ALLOC_CONF": "backend:async"}))
    if a.c10:
        sides.append(("c10", [a.c10, "replay"] + w, {}))
        sides.append(("c10 expandable_segments", [a.c10, "replay"] + w,
                      {"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True"}))
    failed = False
    print(f"{'trace':<28} {'allocator':<28} {'streams':>7} {'warm ns':>9} {'x c10':>6} "
          f"{'cold ns':>9} {'peak alloc':>10} {'peak resv':>10} {'x c10':>6} {'resv-alloc':>10} "
          f"{'x c10':>6} {'run resv':>9} {'x c10':>6} {'grew':>4} {'warm calls':>10} "
          f"{'last pass':>9} {'retries':>7}")
    for tr in a.traces:
        runs = {name: [] for name, _, _ in sides}
        # interleaved, so a slow spell hits every side; each repeat starts one side later, so
        # no side always runs first after a trace change (on the H200 host the side run first
        # was the slower of xdev's two policies on every trace, with the same code path)
        for rep in range(max(1, a.repeat)):
            k = rep % len(sides)
            for name, cmd, env in sides[k:] + sides[:k]:
                r = run(cmd + [tr], env)
                if r is None:
                    failed = True
                    continue
                r["alloc"] = name
                runs[name].append(r)
        res = []
        for name, _, _ in sides:
            rs = runs[name]
            if not rs:
                continue
            r = dict(rs[0])  # peaks and calls are the same in every run; times are not
            for k in ("warm", "cold"):
                v = sorted(x[k] for x in rs)
                r[k] = v[len(v) // 2]
            res.append(r)
        ref = next((r for r in res if r["alloc"] == "c10"), None)

        def ratio(x, y):
            return f"{x / y:6.2f}" if ref and y > 0 else "     -"
        for r in res:
            over = r["presv"] - r["palloc"]
            rover = ref["presv"] - ref["palloc"] if ref else 0
            print(f"{r['trace'][:28]:<28} {r['alloc']:<28} {r['streams']:>7} {r['warm']:>9.1f} "
                  f"{ratio(r['warm'], ref['warm'] if ref else 0)} {r['cold']:>9.1f} "
                  f"{r['palloc']:>10.0f} {r['presv']:>10.0f} "
                  f"{ratio(r['presv'], ref['presv'] if ref else 0)} {over:>10.0f} "
                  f"{ratio(over, rover)} {r['run_resv']:>9.0f} "
                  f"{ratio(r['run_resv'], ref['run_resv'] if ref else 0)} {r['grew']:>4} "
                  f"{r['warm_calls']:>10} {r['last_calls']:>9} {r['retries']:>7}")
        m = meta(tr)
        if m:
            print(f"{'':<28} {'(captured run: ' + ', '.join(f'{k} {v}' for k, v in m.items())[:200] + ')'}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
