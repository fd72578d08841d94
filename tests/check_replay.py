#!/usr/bin/env python3
"""check_replay.py - the caching allocator's growth policy against the kept PyTorch traces:
each trace replayed (bench/alloc_replay, the default policy, a fresh process per trace) must
settle - no backend call in the last of 5 warm passes (the first warm passes may take back a
few segments: which block serves a request breaks size ties by address, so the packing
depends on where the backend put the segments, and differs under a sanitizer) - and reserve
at its peak no more than PyTorch's own allocator did in the captured run (NAME.meta:
peak_reserved).

  check_replay.py ALLOC_REPLAY TRACE.csv.gz...       exit 0 pass, 1 fail, 77 skip"""
import subprocess
import sys


def main(argv):
    if len(argv) < 3:
        print(__doc__)
        return 2
    failures = 0
    for trace in argv[2:]:
        meta = {}
        with open(trace[:-len(".csv.gz")] + ".meta") as f:
            for line in f:
                k, _, v = line.partition(" ")
                meta[k] = v.strip()
        out = subprocess.run([argv[1], "--warm-runs", "5", trace], capture_output=True, text=True)
        rows = [l.split("\t") for l in out.stdout.splitlines() if l.startswith("replay\t")]
        if out.returncode != 0 or len(rows) != 1:
            print(f"check_replay: {trace}: alloc_replay failed: {out.stderr.strip()}")
            failures += 1
            continue
        r = rows[0]
        streams, resv, warm_calls, last = int(r[4]), float(r[8]), int(r[10]), int(r[12])
        torch_resv = int(meta["peak_reserved"]) / 2**20
        ok = last == 0 and resv <= torch_resv
        print(f"check_replay: {r[2]}: {streams} streams, peak reserved {resv:.0f} MiB "
              f"(torch's run {torch_resv:.0f} MiB), backend calls in 5 warm passes {warm_calls}, in "
              f"the last {last}: "
              f"{'ok' if ok else 'FAIL'}")
        failures += not ok
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
