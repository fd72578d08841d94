# SPDX-License-Identifier: Apache-2.0
"""tests/xdev_ctypes.py - libxdev through ctypes, for the interop tests
(interop_numpy.py, gpu/interop_torch.py): the library, the structs they pass
(xdev_device_t, xdev_tensor_view_t), the constants they name, and the checks
that end the test with xdev's message. Messages start with the script's name."""
import ctypes as C
import os
import sys

lib = C.CDLL(os.path.join(os.environ["XT_LIBXDEV_DIR"], "libxdev.so"))
lib.xdev_last_error.restype = C.c_char_p

_TAG = os.path.splitext(os.path.basename(sys.argv[0]))[0]


class Device(C.Structure):  # xdev_device_t
    _fields_ = [("type", C.c_int), ("index", C.c_int)]


class View(C.Structure):  # xdev_tensor_view_t
    _fields_ = [("data", C.c_void_p), ("base", C.c_void_p), ("bytes", C.c_size_t),
                ("device", Device), ("kind", C.c_int), ("dtype", C.c_int),
                ("ndim", C.c_int32), ("shape", C.POINTER(C.c_int64)),
                ("strides", C.POINTER(C.c_int64)), ("contiguous", C.c_bool),
                ("read_only", C.c_bool)]


CPU0, CUDA0 = Device(0, 0), Device(1, 0)  # XDEV_DEVICE_CPU, XDEV_DEVICE_CUDA
F32, I32 = 0, 8  # XDEV_DTYPE_F32, XDEV_DTYPE_I32
CONTIGUOUS, WRITABLE = 1, 2  # XDEV_DLPACK_CONTIGUOUS, XDEV_DLPACK_WRITABLE
HOST_MEMORY, DEVICE_MEMORY = 0, 1  # xdev_memory_kind_t


def ok(status, what):
    if status != 0:
        sys.exit(f"{_TAG}: {what} failed ({status}): {lib.xdev_last_error().decode()}")


def fails(status, needle, what):
    msg = lib.xdev_last_error().decode()
    if status == 0 or needle not in msg:
        sys.exit(f"{_TAG}: {what}: expected a failure mentioning '{needle}', got {status}: {msg}")


def kind_of(ptr):
    """What xdev_pointer_get_info says ptr is (xdev_memory_kind_t: its first field)."""
    info = (C.c_byte * 64)()
    ok(lib.xdev_pointer_get_info(C.c_void_p(ptr), info), "xdev_pointer_get_info")
    return C.c_int.from_buffer(info).value
