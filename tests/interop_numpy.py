# SPDX-License-Identifier: Apache-2.0
"""tests/interop_numpy.py - DLPack between NumPy and xdev on the CPU backend,
through ctypes (the "small Python shim": xdev has no Python package).

NumPy -> xdev: two NumPy arrays are imported (xdev_dlpack_import_unversioned:
NumPy before 2.1 speaks DLPack 0.x) and xdev's GEMM writes their product into
a third, imported too; NumPy sees the values with no copy. xdev -> NumPy: an
xdev allocation filled by xdev is exported (xdev_dlpack_export_unversioned)
and numpy.from_dlpack wraps it, no copy: a later write by xdev is seen by
NumPy; xdev_free while NumPy holds it is put off until NumPy lets go. Bad
input: a capsule consumed twice, a non-contiguous array where a contiguous
one is required. With NumPy 2.1 or later the versioned format is used as
well. Run by ctest (interop.numpy) with XT_LIBXDEV_DIR set; prints one line
per exchange and "ok" last."""
import ctypes as C
import gc
import os

import numpy as np

import dlpack_capsule as capsule
from xdev_ctypes import (CONTIGUOUS, CPU0, DEVICE_MEMORY, F32, HOST_MEMORY, I32, WRITABLE, View,
                         fails, kind_of, lib, ok)


def import_array(a, require):
    """NumPy's capsule into xdev; the capsule is marked used, as a consumer must."""
    cap = a.__dlpack__()
    ptr = capsule.pointer(cap, False)
    view = View()
    st = lib.xdev_dlpack_import_unversioned(C.c_void_p(ptr), C.c_uint32(require), None,
                                            C.byref(view))
    if st == 0:
        capsule.mark_used(cap, False)
    return st, view, cap, ptr


def numpy_to_xdev():
    a = np.arange(1, 7, dtype=np.float32).reshape(2, 3)
    b = np.array([[1, 0], [0, 1], [1, 1]], dtype=np.float32)
    c = np.full((2, 2), -1, dtype=np.float32)
    views = []
    for arr in (a, b, c):
        st, v, _, _ = import_array(arr, CONTIGUOUS | WRITABLE)
        ok(st, "importing a NumPy array")
        assert v.data == arr.ctypes.data and v.device.type == 0 and v.dtype == F32
        views.append(v)
    va, vb, vc = views
    # row-major C = A B: column-major C^T = B^T A^T
    ok(lib.xdev_gemm(F32, 0, 0, C.c_int64(2), C.c_int64(2), C.c_int64(3), C.c_double(1.0),
                     C.c_void_p(vb.data), C.c_int64(2), C.c_void_p(va.data), C.c_int64(3),
                     C.c_double(0.0), C.c_void_p(vc.data), C.c_int64(2), None), "xdev_gemm")
    ok(lib.xdev_synchronize(), "xdev_synchronize")
    assert np.array_equal(c, a @ b), f"xdev's GEMM into NumPy's array gave {c}, not {a @ b}"
    for v in views:
        ok(lib.xdev_memory_unregister(C.c_void_p(v.base)), "xdev_memory_unregister")
    print(f"interop_numpy: numpy -> xdev: xdev_gemm wrote {c.tolist()} into NumPy's array, "
          "no copy")


def bad_input():
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    st, v, cap, ptr = import_array(a.T, CONTIGUOUS)  # a transposed view
    fails(st, "not contiguous", "importing a transposed array as contiguous")
    st, v, cap, ptr = import_array(a, 0)
    ok(st, "importing an array")
    st = lib.xdev_dlpack_import_unversioned(C.c_void_p(ptr), 0, None, C.byref(View()))
    fails(st, "consumed once", "importing the same capsule twice")
    ok(lib.xdev_memory_unregister(C.c_void_p(v.base)), "xdev_memory_unregister")
    print("interop_numpy: refused: a transposed array where contiguous was required, a capsule "
          "consumed twice")


class Exported:
    """What numpy.from_dlpack takes: __dlpack__ gives xdev's capsule."""

    def __init__(self, managed, device):
        self.managed, self.device = managed, device

    def __dlpack__(self, stream=None, max_version=None, **kw):
        name = b"dltensor" if max_version is None or max_version[0] < 1 else b"dltensor_versioned"
        if name != self.name:
            raise BufferError("this export was made in the other format")
        return capsule.new(self.managed, name == b"dltensor_versioned")

    def __dlpack_device__(self):
        return self.device


def xdev_to_numpy(versioned):
    n = 6
    buf = C.c_void_p()
    ok(lib.xdev_malloc_device(CPU0, C.byref(buf), C.c_size_t(4 * n)), "xdev_malloc_device")
    host = (C.c_int32 * n)(*range(10, 10 + n))
    ok(lib.xdev_memcpy(buf, host, C.c_size_t(4 * n)), "xdev_memcpy")
    shape = (C.c_int64 * 2)(2, 3)
    managed = C.c_void_p()
    if versioned:
        ok(lib.xdev_dlpack_export(buf, 2, shape, None, I32, C.c_uint64(0), None, None,
                                  C.byref(managed)), "xdev_dlpack_export")
    else:
        ok(lib.xdev_dlpack_export_unversioned(buf, 2, shape, None, I32, None, None,
                                              C.byref(managed)),
           "xdev_dlpack_export_unversioned")
    ex = Exported(managed.value, (1, 0))
    ex.name = b"dltensor_versioned" if versioned else b"dltensor"
    arr = np.from_dlpack(ex)
    assert arr.shape == (2, 3) and arr.dtype == np.int32
    assert arr.tolist() == [[10, 11, 12], [13, 14, 15]], arr.tolist()
    # written by xdev after the export, seen by NumPy: the same memory (NumPy
    # before 2.1 makes from_dlpack's arrays read-only, so xdev writes)
    seven = C.c_int32(99)
    ok(lib.xdev_memcpy(C.c_void_p(buf.value + 20), C.byref(seven), C.c_size_t(4)), "xdev_memcpy")
    assert arr[1, 2] == 99, arr.tolist()
    ok(lib.xdev_free(buf), "xdev_free while NumPy holds it")
    info = (C.c_byte * 64)()
    ok(lib.xdev_pointer_get_info(buf, info), "xdev_pointer_get_info")
    assert C.c_int.from_buffer(info).value == DEVICE_MEMORY, "freed while NumPy held it"
    assert arr[0, 0] == 10
    del arr
    gc.collect()
    ok(lib.xdev_pointer_get_info(buf, info), "xdev_pointer_get_info")
    assert C.c_int.from_buffer(info).value == HOST_MEMORY, "still held after NumPy let go"
    print(f"interop_numpy: xdev -> numpy ({'DLPack 1.x' if versioned else 'DLPack 0.x'}): "
          "numpy.from_dlpack read xdev's values and saw xdev's later write, xdev_free waited "
          "for NumPy to let go")


def unconsumed_capsule():
    """A capsule nobody takes still gives the export back (its destructor)."""
    buf = C.c_void_p()
    ok(lib.xdev_malloc_device(CPU0, C.byref(buf), C.c_size_t(64)), "xdev_malloc_device")
    ex = Exported(None, (1, 0))
    shape = (C.c_int64 * 1)(16)
    managed = C.c_void_p()
    ok(lib.xdev_dlpack_export_unversioned(buf, 1, shape, None, I32, None, None,
                                          C.byref(managed)), "xdev_dlpack_export_unversioned")
    ex.managed, ex.name = managed.value, b"dltensor"
    cap = ex.__dlpack__()
    ok(lib.xdev_free(buf), "xdev_free while the capsule holds it")
    assert kind_of(buf.value) == DEVICE_MEMORY, "freed while the capsule held it"
    del cap, ex
    gc.collect()
    assert kind_of(buf.value) == HOST_MEMORY, "the dropped capsule kept the allocation"
    print("interop_numpy: a capsule nobody took gave the export back when it was dropped")


def main():
    os.environ.setdefault("XDEV_BACKEND", "cpu")
    numpy_to_xdev()
    bad_input()
    xdev_to_numpy(versioned=False)
    unconsumed_capsule()
    major, minor = (int(x) for x in np.__version__.split(".")[:2])
    if (major, minor) >= (2, 1):
        xdev_to_numpy(versioned=True)
    else:
        print(f"interop_numpy: NumPy {np.__version__} speaks DLPack 0.x only: the versioned "
              "format is checked by test_interop and on the GPU machine with PyTorch")
    print("interop_numpy: ok")


main()
