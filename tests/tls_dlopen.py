# SPDX-License-Identifier: Apache-2.0
"""tls_dlopen.py - load libxdev late, from Python's ctypes (tls.dlopen_python).

A late dlopen gets static TLS from glibc's small spare reserve; libxdev
once asked for more and failed here with "cannot allocate memory in static
TLS block" (tests/test_tls.c says why). Loads the library given, counts the
CPU devices and reads an error message back through it."""
import ctypes
import sys

lib = ctypes.CDLL(sys.argv[1])
lib.xdev_last_error.restype = ctypes.c_char_p
n = ctypes.c_int()
st = lib.xdev_device_count(0, ctypes.byref(n))
assert st == 0 and n.value >= 1, (st, n.value, lib.xdev_last_error())


class Dev(ctypes.Structure):
    _fields_ = [("type", ctypes.c_int), ("index", ctypes.c_int)]


st = lib.xdev_set_device(Dev(0, 9999))
msg = lib.xdev_last_error().decode()
assert st != 0 and "xdev_set_device" in msg, (st, msg)
print("loaded", sys.argv[1], "-", n.value, "cpu devices; bad index:", msg)
