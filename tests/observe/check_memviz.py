#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""check_memviz.py - what the memory view should draw of a snapshot (xdev_memory_snapshot's
JSON), for tests/observe/observe.sh browser.

  check_memviz.py bands SNAPSHOT.json       the number of allocations the active memory
                                            timeline draws as bands (all devices)
  check_memviz.py summaries SNAPSHOT.json   the number of devices with a summary table
  check_memviz.py stretch SNAPSHOT.json     "A-B": ms from the first history entry of any
                                            device (the page's one time base), the
                                            stretch where the first device makes its last
                                            three quarters of allocations (for a zoomed-in
                                            screenshot)
  check_memviz.py name SNAPSHOT.json OUT.json NAME...
                                            the snapshot with its streams named NAME...
                                            (in order of first appearance in the segments,
                                            then in allocations and frees of the history),
                                            as if by xdev_stream_set_name; prints the
                                            names given

A band is an allocation of the recorded history: each alloc entry, each free of an
address with no alloc before it (allocated before recording began), and each live
block of the snapshot that no alloc entry accounts for. Exit 0, 2 on bad usage."""
import json
import sys


def bands(snap):
    total = 0
    by_device = {}
    for t in snap.get("device_traces", []):
        by_device[str(t.get("device"))] = t.get("entries", [])
    devices = {str(s.get("device")) for s in snap["segments"]} | set(by_device)
    for dev in devices:
        live = set()
        count = 0
        for e in by_device.get(dev, []):
            a = e.get("action")
            if a == "alloc":
                live.add(e["addr"])
                count += 1
            elif a == "free_requested" and e["addr"] not in live:
                live.add(e["addr"])  # requested before its free completes: one band
                count += 1
            elif a == "free_completed":
                if e["addr"] in live:
                    live.discard(e["addr"])
                else:
                    count += 1
        for s in snap["segments"]:
            if str(s.get("device")) != dev:
                continue
            for b in s["blocks"]:
                if b["state"] != "inactive" and b["address"] not in live:
                    count += 1
        total += count
    return total


def stretch(snap):
    # the page's one time base: the first entry any device recorded
    firsts = [t["entries"][0]["time_ns"] for t in snap.get("device_traces", []) if t.get("entries")]
    for t in snap.get("device_traces", []):
        es = t.get("entries", [])
        if not es:
            continue
        base = min(firsts)
        allocs = [e["time_ns"] - base for e in es if e.get("action") == "alloc"]
        if not allocs:
            continue
        a, b = allocs[len(allocs) // 4], allocs[-1]
        pad = max((b - a) * 0.1, 5000)
        return "%.3f-%.3f" % (max(a - pad, 0) / 1e6, (b + pad) / 1e6)
    return "0-1"


# entries whose stream the page shows (the timeline's legend, the out-of-memory table)
SHOWN = ("alloc", "free_requested", "free_completed", "oom")


def name(snap, names):
    streams = []
    for s in snap["segments"]:
        if (s["device"], s["stream"]) not in streams:
            streams.append((s["device"], s["stream"]))
    for t in snap.get("device_traces", []):
        for e in t.get("entries", []):
            if e.get("action") in SHOWN and (t["device"], e["stream"]) not in streams:
                streams.append((t["device"], e["stream"]))
    given = []
    snap["stream_names"] = []
    for (dev, stream), n in zip(streams, names):
        snap["stream_names"].append({"device": dev, "stream": stream, "name": n})
        given.append(n)
    return given


def main(argv):
    if len(argv) < 3 or argv[1] not in ("bands", "summaries", "stretch", "name"):
        print(__doc__)
        return 2
    with open(argv[2]) as f:
        snap = json.load(f)
    if argv[1] == "bands":
        print(bands(snap))
    elif argv[1] == "summaries":
        print(sum(1 for d in snap.get("device_stats", []) if d.get("summary")))
    elif argv[1] == "stretch":
        print(stretch(snap))
    else:
        if len(argv) < 5:
            print(__doc__)
            return 2
        given = name(snap, argv[4:])
        with open(argv[3], "w") as f:
            json.dump(snap, f)
        print(" ".join(given))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
