#!/usr/bin/env python3
"""Run the ctest suites that select XDEV_BACKEND=cpu again with XDEV_BACKEND=cuda.

Usage: run_suites_cuda.py BUILD_DIR

The suites are written against the default device type; ctest pins the CPU
backend for them. This reruns each such entry (same command, same other
environment, XDEV_BACKEND=cuda) and prints one line per entry plus a
'N passed, N failed, N skipped' total. Entries that point XDEV_PLUGIN_PATH at
fake plugins, the selection tests (they are about XDEV_BACKEND itself) and the
gpu-labelled ones (already cuda) are left out.
"""
import json
import os
import subprocess
import sys
import time


def main():
    build = sys.argv[1]
    info = json.loads(subprocess.check_output(["ctest", "--test-dir", build, "--show-only=json-v1"]))
    counts = {"passed": 0, "failed": 0, "skipped": 0}
    for t in info["tests"]:
        props = {p["name"]: p["value"] for p in t.get("properties", [])}
        mods = props.get("ENVIRONMENT_MODIFICATION", [])
        plain = props.get("ENVIRONMENT", [])
        labels = props.get("LABELS", [])
        if "gpu" in labels or "select" in labels or not t.get("command"):
            continue
        env = dict(os.environ)
        backend = None
        skip_entry = False
        for m in mods:
            var, rest = m.split("=", 1)
            op, _, value = rest.partition(":")
            if op == "unset":
                env.pop(var, None)
            elif op == "set":
                env[var] = value
                if var == "XDEV_BACKEND":
                    backend = value
                if var == "XDEV_PLUGIN_PATH":
                    skip_entry = True
        for kv in plain:
            var, _, value = kv.partition("=")
            env[var] = value
            if var == "XDEV_BACKEND":
                backend = value
        if backend != "cpu" or skip_entry:
            continue
        env["XDEV_BACKEND"] = "cuda"
        t0 = time.time()
        p = subprocess.run(t["command"], cwd=props.get("WORKING_DIRECTORY", build), env=env,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=600)
        dt = time.time() - t0
        out = p.stdout.decode(errors="replace")
        regex = props.get("PASS_REGULAR_EXPRESSION")
        if p.returncode == props.get("SKIP_RETURN_CODE", -1):
            verdict = "skipped"
        elif regex:
            import re
            verdict = "passed" if any(re.search(r, out, re.S) for r in regex) else "failed"
        else:
            verdict = "passed" if p.returncode == 0 else "failed"
        counts[verdict] += 1
        print(f"{verdict.upper():8s} {t['name']:40s} {dt:6.1f} s  (rc {p.returncode})", flush=True)
        if verdict != "passed":
            print("    " + "\n    ".join(out.strip().splitlines()[-25:]), flush=True)
    print(f"cuda-rerun: {counts['passed']} passed, {counts['failed']} failed, "
          f"{counts['skipped']} skipped")
    return 0


if __name__ == "__main__":
    sys.exit(main())
