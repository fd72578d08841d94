# SPDX-License-Identifier: Apache-2.0
"""Check a pickled memory snapshot from xdev_memory_snapshot_torch.

Usage: check_torch_snapshot.py FILE DEVICE_INDEX MIN_SEGMENTS MIN_TRACE_ENTRIES

Loads the file with Python's pickle and checks the structure PyTorch's
memory viewer reads (torch.cuda.memory._snapshot()): segments with device
indices, sizes that add up and torch's state names; one trace list per
device index with torch's action names and non-decreasing time_us. Exits 1
with a message on the first difference. Also run by tests/gpu/run.sh, which
then hands the dict to torch.cuda._memory_viz.
"""
import pickle
import sys


def fail(msg):
    print("check_torch_snapshot: " + msg)
    sys.exit(1)


def main():
    path, device, min_segments, min_entries = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    with open(path, "rb") as f:
        snap = pickle.load(f)
    if not isinstance(snap, dict) or set(snap) != {"segments", "device_traces"}:
        fail("top level is not {segments, device_traces}: %r" % (type(snap),))
    segs = [s for s in snap["segments"] if s["device"] == device]
    if len(segs) < min_segments:
        fail("%d segments on device %d, expected at least %d" % (len(segs), device, min_segments))
    states = {"active_allocated", "active_pending_free", "inactive"}
    for s in snap["segments"]:
        for key in ("address", "total_size", "allocated_size", "active_size", "requested_size", "stream"):
            if not isinstance(s[key], int) or s[key] < 0:
                fail("segment %s is not a non-negative int: %r" % (key, s[key]))
        if s["segment_type"] not in ("small", "large", "managed"):  # managed: xdev_malloc_managed
            fail("segment_type %r" % s["segment_type"])
        if s["segment_pool_id"] != (0, 0) or s["is_expandable"] is not False or s["frames"] != []:
            fail("segment_pool_id / is_expandable / frames: %r" % (s,))
        total, addr, allocated = 0, s["address"], 0
        for b in s["blocks"]:
            if b["state"] not in states:
                fail("block state %r" % b["state"])
            if b["address"] != addr:
                fail("blocks do not tile the segment at %#x" % addr)
            addr += b["size"]
            total += b["size"]
            if b["state"] == "active_allocated":
                allocated += b["size"]
            if b["frames"] != []:
                fail("block frames %r" % b["frames"])
        if total != s["total_size"] or allocated != s["allocated_size"]:
            fail("block sizes %d (allocated %d) vs segment %d (%d)" % (total, allocated, s["total_size"], s["allocated_size"]))
    traces = snap["device_traces"]
    if not isinstance(traces, list) or len(traces) <= device:
        fail("device_traces has %d lists, device %d has none" % (len(traces), device))
    entries = traces[device]
    if len(entries) < min_entries:
        fail("%d trace entries on device %d, expected at least %d" % (len(entries), device, min_entries))
    actions = {"alloc", "free_requested", "free_completed", "segment_alloc", "segment_free", "oom"}
    last = -1
    for e in entries:
        if e["action"] not in actions:
            fail("action %r" % e["action"])
        if e["time_us"] < last:
            fail("time_us goes back: %d after %d" % (e["time_us"], last))
        last = e["time_us"]
        for key in ("addr", "size", "stream"):
            if not isinstance(e[key], int):
                fail("entry %s %r" % (key, e[key]))
    print("check_torch_snapshot: ok: %d segments, %d trace entries on device %d" % (len(segs), len(entries), device))


if __name__ == "__main__":
    main()
