# SPDX-License-Identifier: Apache-2.0
"""Load a file xdev wrote with Python's own readers and look for strings in it.

Usage: check_loads.py json|pickle FILE [HEX ...]

json: json.load of the file opened as UTF-8 (strict); pickle: pickle.load.
Each HEX is the UTF-8 of a string (hex digits) that must appear, exactly, as
a string somewhere in the loaded value (a dict key, a value, a list item).
Exits 1 with a message when the file does not load or a string is missing,
so that "the file parses with the standard tools" is checked by them.
"""
import json
import pickle
import sys


def strings(value, out):
    if isinstance(value, str):
        out.add(value)
    elif isinstance(value, dict):
        for k, v in value.items():
            strings(k, out)
            strings(v, out)
    elif isinstance(value, (list, tuple)):
        for v in value:
            strings(v, out)
    return out


def main():
    kind, path, wanted = sys.argv[1], sys.argv[2], sys.argv[3:]
    try:
        if kind == "json":
            with open(path, encoding="utf-8", errors="strict") as f:
                value = json.load(f)
        else:
            with open(path, "rb") as f:
                value = pickle.load(f)
    except Exception as e:  # what the reader says is the finding
        print("check_loads: %s does not load with %s: %s: %s" % (path, kind, type(e).__name__, e))
        return 1
    found = strings(value, set())
    for h in wanted:
        s = bytes.fromhex(h).decode("utf-8")
        if s not in found:
            near = sorted(x for x in found if x[:1] == s[:1])[:5]
            print("check_loads: %s: no string %r; strings that begin alike: %r" % (path, s, near))
            return 1
    print("check_loads: %s loads with %s; %d string(s) found" % (path, kind, len(wanted)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
