# SPDX-License-Identifier: Apache-2.0
"""python -m xdev: which libxdev the package loaded and how it was found, and
the devices of every backend (a quick check of an installation)."""
import xdev


def main():
    path, how = xdev.library_path()
    print(f"xdev {xdev.version()}: {path} ({how})")
    print(f"default device type: {xdev.default_device_type()}")
    for t in ("cpu", "cuda", "hip"):
        try:
            n = xdev.device_count(t)
        except xdev.XdevError:
            continue  # no backend of that name in this build
        for i in range(n):
            p = xdev.get_device_properties(xdev.Device(t, i))
            print(f"  {t}:{i}: {p.name}, {p.total_memory >> 20} MiB, "
                  f"{p.multiprocessor_count} {'cores' if t == 'cpu' else 'multiprocessors'}")


main()
