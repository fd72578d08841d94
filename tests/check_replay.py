#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""check_replay.py - the caching allocator's growth policy against the kept PyTorch traces:
each trace replayed (bench/alloc_replay, the default policy, a fresh process per trace) must
settle - no backend call in any of 5 warm passes - and reserve, at its peak over the whole
run (warm passes included), no more than PyTorch's own allocator did in the captured run
(NAME.meta: peak_reserved). Runs and reads the replays with bench/replay_compare.py's own functions.

  check_replay.py ALLOC_REPLAY TRACE.csv.gz...       exit 0 pass, 1 fail"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "bench"))
from replay_compare import meta, run  # noqa: E402


def main(argv):
    if len(argv) < 3:
        print(__doc__)
        return 2
    failures = 0
    for trace in argv[2:]:
        r = run([argv[1], "--warm-runs", "5", trace], {})
        if r is None:  # run() printed why
            failures += 1
            continue
        torch_resv = int(meta(trace)["peak_reserved"]) / 2**20
        ok = r["warm_calls"] == 0 and r["run_resv"] <= torch_resv
        print(f"check_replay: {r['trace']}: {r['streams']} streams, peak reserved over the run "
              f"{r['run_resv']:.0f} MiB (cold pass {r['presv']:.0f}; torch's run "
              f"{torch_resv:.0f} MiB), backend calls in 5 warm passes {r['warm_calls']}: "
              f"{'ok' if ok else 'FAIL'}")
        failures += not ok
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
