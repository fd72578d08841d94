#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""check_trace.py - the structure of a stream trace written by xdev (xdev_trace_start,
XDEV_TRACE_FILE): valid Trace Event Format JSON that Perfetto and chrome://tracing read.

  check_trace.py TRACE.json [--expect memcpy,fill,...]

Checks: the JSON object form (traceEvents, displayTimeUnit); each event's required
fields for its phase; a process name for every pid and a thread name for every track;
one track per stream (no stream named twice in a device, no track named twice); times
non-decreasing on every track; work on one stream timed by one clock (device events, or the
host functions' own stamps) never overlapping;
range begins and ends balanced per thread; every flow start with its finish; the
operations named by --expect present on stream tracks. Exit 0 when all hold, 1 with
the failures listed, 77 (skip) without Python 3."""
import json
import sys
from collections import defaultdict

REQUIRED = {
    "X": ("name", "ts", "dur", "pid", "tid"),
    "B": ("name", "ts", "pid", "tid"),
    "E": ("ts", "pid", "tid"),
    "i": ("name", "ts", "pid", "tid", "s"),
    "C": ("name", "ts", "pid", "args"),
    "s": ("name", "ts", "pid", "tid", "id"),
    "f": ("name", "ts", "pid", "tid", "id", "bp"),
    "M": ("name", "pid", "args"),
}


def main(argv):
    if len(argv) < 2:
        print(__doc__)
        return 2
    expect = []
    if "--expect" in argv:
        expect = [x for x in argv[argv.index("--expect") + 1].split(",") if x]
    with open(argv[1]) as f:
        doc = json.load(f)
    errors = []
    events = doc.get("traceEvents")
    if not isinstance(events, list) or "displayTimeUnit" not in doc:
        return fail(["not the object form: no traceEvents list or no displayTimeUnit"])
    procs, threads = {}, {}
    last_ts = {}
    busy = defaultdict(list)  # device stream track -> [(begin, end, name)]
    depth = defaultdict(int)
    flows = defaultdict(int)
    seen_ops = set()
    for k, e in enumerate(events):
        ph = e.get("ph")
        if ph not in REQUIRED:
            errors.append(f"event {k}: unknown phase {ph!r}")
            continue
        missing = [f for f in REQUIRED[ph] if f not in e]
        if missing:
            errors.append(f"event {k} ({ph} {e.get('name')}): missing {missing}")
            continue
        if ph == "M":
            if e["name"] == "process_name":
                procs[e["pid"]] = e["args"]["name"]
            elif e["name"] == "thread_name":
                key = (e["pid"], e["tid"])
                if key in threads:
                    errors.append(f"track {key} named twice")
                threads[key] = e["args"]["name"]
            continue
        track = (e["pid"], e.get("tid", -1))
        if ph == "C":
            if not all(isinstance(v, (int, float)) for v in e["args"].values()):
                errors.append(f"event {k}: counter values not numbers")
            track = (e["pid"], "counter:" + e["name"])
        if track in last_ts and e["ts"] < last_ts[track]:
            errors.append(f"event {k}: ts {e['ts']} before {last_ts[track]} on track {track}")
        last_ts[track] = e["ts"]
        if ph == "X":
            if e["dur"] < 0:
                errors.append(f"event {k}: negative dur")
            if e["pid"] != 0 and e.get("cat") == "stream":
                seen_ops.add(e["name"])
                timing = e.get("args", {}).get("timing")
                if timing in ("device", "host function"):
                    # one clock per check: device-timed and host-timed work are placed on
                    # one timeline through a calibration that carries its own error
                    busy[track + (timing,)].append((e["ts"], e["ts"] + e["dur"], e["name"]))
        elif ph == "B":
            depth[track] += 1
        elif ph == "E":
            depth[track] -= 1
            if depth[track] < 0:
                errors.append(f"event {k}: range end without a begin on {track}")
        elif ph in "sf":
            flows[e["id"]] += 1 if ph == "s" else -1
    for pid in {p for p, _ in last_ts} | {p for p, _ in threads}:
        if pid not in procs:
            errors.append(f"pid {pid} has no process_name")
    for track in last_ts:
        if isinstance(track[1], int) and track not in threads:
            errors.append(f"track {track} has no thread_name")
    names = defaultdict(set)
    for (pid, tid), name in threads.items():
        if name in names[pid]:
            errors.append(f"{procs.get(pid)}: two tracks named {name!r}")
        names[pid].add(name)
    for track, spans in busy.items():
        spans.sort()
        for (b0, e0, n0), (b1, e1, n1) in zip(spans, spans[1:]):
            if b1 < e0 - 2.0:  # us: float event times and the calibration chain
                errors.append(f"{threads.get(track[:2])}: {n1} at {b1} overlaps {n0} ending {e0}")
    errors += [f"{threads.get(t)}: {d} ranges left open" for t, d in depth.items() if d > 0]
    errors += [f"flow {i}: start without finish" for i, n in flows.items() if n != 0]
    errors += [f"no {op!r} on a stream track" for op in expect if op not in seen_ops]
    if errors:
        return fail(errors)
    devices = sorted(v for p, v in procs.items() if p != 0)
    streams = sum(1 for (p, _) in threads if p != 0)
    timed = sum(len(v) for v in busy.values())
    print(f"check_trace: {len(events)} events, devices {devices}, {streams} stream tracks, "
          f"{timed} device-timed spans, ops {sorted(seen_ops)}: OK")
    return 0


def fail(errors):
    for e in errors[:40]:
        print("check_trace: " + e)
    print(f"check_trace: {len(errors)} problem(s)")
    return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
