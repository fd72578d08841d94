#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""tests/gpu/heat_compare.py - compare two runs of examples/heat (one per
device) with the same arguments: the initial checksum (an integer kernel)
must be identical, each reported step's change and mean temperature equal
within a relative tolerance (float kernels: each compiler may fuse the
stencil's multiply-adds differently). Exit 0 when they agree."""
import re
import sys

TOL = 1e-4


def parse(path):
    text = open(path, encoding="utf-8", errors="replace").read()
    dev = re.search(r"^device: (\S+)", text, re.M)
    chk = re.search(r"^initial checksum (\d+)", text, re.M)
    steps = [(int(s), float(c), float(t)) for s, c, t in re.findall(
        r"^step +(\d+) +change ([0-9.e+-]+) +mean temperature ([0-9.e+-]+)", text, re.M)]
    ok = re.search(r"^device \S+: OK", text, re.M) is not None
    return (dev.group(1) if dev else "?"), (int(chk.group(1)) if chk else None), steps, ok


def main():
    a, b = parse(sys.argv[1]), parse(sys.argv[2])
    print(f"{a[0]} vs {b[0]}: checksum {a[1]} vs {b[1]}, {len(a[2])} / {len(b[2])} reports, "
          f"OK lines {a[3]} / {b[3]}")
    bad = a[1] is None or a[1] != b[1] or not a[2] or len(a[2]) != len(b[2]) or not (a[3] and b[3])
    worst = 0.0
    for (s1, c1, t1), (s2, c2, t2) in zip(a[2], b[2]):
        if s1 != s2:
            bad = True
            continue
        for x, y in ((c1, c2), (t1, t2)):
            rel = abs(x - y) / max(abs(x), abs(y), 1e-30)
            worst = max(worst, rel)
    print(f"largest relative difference of change / mean temperature: {worst:.3e} "
          f"(tolerance {TOL:g})")
    if bad or worst > TOL:
        print("heat_compare: the runs DISAGREE")
        return 1
    print("heat_compare: same curve (integer checksum identical)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
