#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""parity_check.py - xdev-info's view of the GPUs beside nvidia-smi's, taken in the same run
(tests/gpu/run.sh step parity; issue 49).

  parity_check.py XDEV_INFO

Runs `xdev-info --json` (XDEV_BACKEND=cuda) and `nvidia-smi --query-gpu=...` back to back and
checks, per GPU (matched by index: neither side renumbers unless CUDA_VISIBLE_DEVICES is set):
the UUID and PCI bus id equal, is_mig as nvidia-smi -L says, temperature within 5 C, power within
25% or 40 W, SM clock within 20% or 150 MHz, memory used within 10% or 1 GiB (xdev-info holds a
context of its own), bf16/tf32 as the compute capability says. Prints both readings side by side;
exits 1 on a mismatch."""
import json
import os
import subprocess
import sys

FIELDS = "index,uuid,pci.bus_id,temperature.gpu,power.draw,clocks.sm,memory.used,compute_cap"


def smi():
    out = subprocess.run(["nvidia-smi", "--query-gpu=" + FIELDS, "--format=csv,noheader,nounits"],
                         check=True, capture_output=True, text=True).stdout
    rows = []
    for line in out.strip().splitlines():
        v = [x.strip() for x in line.split(",")]
        rows.append(dict(zip(FIELDS.split(","), v)))
    return rows


def num(s):
    try:
        return float(s)
    except ValueError:
        return None


def close(a, b, rel, absolute):
    return a is not None and b is not None and abs(a - b) <= max(rel * max(abs(a), abs(b)), absolute)


def main():
    info = sys.argv[1]
    env = dict(os.environ, XDEV_BACKEND="cuda")
    x = json.loads(subprocess.run([info, "--json"], check=True, capture_output=True, text=True,
                                  env=env).stdout)
    s = smi()
    mig = "MIG-" in subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True).stdout
    cuda = [b for b in x["backends"] if b["type"] == "cuda"][0]
    bad = 0
    print(f"{'':8} {'xdev-info':>40} {'nvidia-smi':>40}")
    for d in cuda["devices"]:
        i = int(d["device"].split(":")[1])
        if i >= len(s):
            print(f"cuda:{i}: nvidia-smi lists only {len(s)} GPUs")
            bad += 1
            continue
        n, t = s[i], d.get("telemetry", {})
        pci_smi = n["pci.bus_id"].lower()[-12:]  # 00000000:3B:00.0 -> 0000:3b:00.0
        mem = t.get("memory_used")
        checks = [
            ("uuid", d.get("uuid"), n["uuid"], d.get("uuid") == n["uuid"] or
             (d.get("is_mig") and d.get("uuid", "").startswith("MIG-"))),
            ("pci_bus_id", d.get("pci_bus_id"), pci_smi, d.get("pci_bus_id") == pci_smi),
            ("temperature C", t.get("temperature"), n["temperature.gpu"],
             close(t.get("temperature"), num(n["temperature.gpu"]), 0, 5)),
            ("power mW", t.get("power_draw"), n["power.draw"],
             close(t.get("power_draw"), (num(n["power.draw"]) or 0) * 1000, 0.25, 40000)),
            ("SM clock MHz", t.get("clock_rate"), n["clocks.sm"],
             close(t.get("clock_rate"), num(n["clocks.sm"]), 0.20, 150)),
            ("memory used MiB", None if mem is None else mem >> 20, n["memory.used"],
             close(None if mem is None else mem / 2**20, num(n["memory.used"]), 0.10, 1024)),
            ("bf16", d.get("bf16"), n["compute_cap"], d.get("bf16") == ((num(n["compute_cap"]) or 0) >= 8)),
            ("tf32", d.get("tf32"), n["compute_cap"], d.get("tf32") == ((num(n["compute_cap"]) or 0) >= 8)),
            ("is_mig", d.get("is_mig"), "MIG listed" if mig else "no MIG",
             not d.get("is_mig") or mig),
        ]
        for name, a, b, ok in checks:
            print(f"cuda:{i:<3} {name:<16} {str(a):>28} {str(b):>40}  {'ok' if ok else 'MISMATCH'}")
            bad += not ok
    print("arch list:", cuda.get("arch_list"), "| gencode:", cuda.get("gencode_flags"))
    print("parity:", "ok" if bad == 0 else f"{bad} mismatch(es)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
