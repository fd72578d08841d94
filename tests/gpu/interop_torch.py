# SPDX-License-Identifier: Apache-2.0
"""tests/gpu/interop_torch.py - DLPack between PyTorch and xdev on CUDA, through
ctypes (xdev has no Python package).

torch -> xdev: three CUDA tensors are imported (DLPack 1.x: __dlpack__ with
max_version=(1, 0), xdev's stream named as the consumer's, so torch orders
it after its own work) and xdev's GEMM writes A B into C: torch sees C with
no copy. xdev -> torch: an xdev allocation filled on an xdev stream is
handed to torch.from_dlpack; torch names its current stream and xdev makes
that stream wait for its own with an event (no host wait); torch doubles the
values in place and xdev reads them back; xdev_free while torch holds the
tensor waits for torch to let go. Round trip: xdev memory -> torch -> xdev
(the import is an alias of xdev's own allocation). Bad input: a capsule
consumed twice, a non-contiguous tensor where a contiguous one is required,
a tensor on a device xdev cannot see. Prints one line per exchange, "ok"
last; exits 77 without PyTorch or a GPU."""
import ctypes as C
import gc
import os
import sys

try:
    import torch
except ImportError:
    print("SKIP: PyTorch not installed")
    sys.exit(77)
if not torch.cuda.is_available():
    print("SKIP: no CUDA device for PyTorch")
    sys.exit(77)

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import dlpack_capsule as capsule  # noqa: E402

os.environ["XDEV_ALLOW_TF32"] = "0"  # f32 GEMM in f32, checked against f64 (read at init)
from xdev_ctypes import (CONTIGUOUS, CUDA0, DEVICE_MEMORY, F32, HOST_MEMORY, WRITABLE,  # noqa: E402
                         View, fails, kind_of, lib, ok)


def new_stream():
    s = C.c_void_p()
    ok(lib.xdev_stream_create(CUDA0, 0, C.byref(s)), "xdev_stream_create")
    native = C.c_void_p()
    ok(lib.xdev_stream_native_handle(s, C.byref(native)), "xdev_stream_native_handle")
    return s, native.value or 0


def import_tensor(t, require, stream, native):
    """torch's capsule into xdev, torch ordering xdev's stream after its work."""
    cap = t.__dlpack__(stream=native or None, max_version=(1, 0))
    ptr = capsule.pointer(cap, True)
    view = View()
    st = lib.xdev_dlpack_import(C.c_void_p(ptr), C.c_uint32(require), stream, C.byref(view))
    if st == 0:
        capsule.mark_used(cap, True)
    return st, view, cap, ptr


def torch_to_xdev():
    s, native = new_stream()
    torch.manual_seed(0)
    a = torch.randn(256, 128, device="cuda")
    b = torch.randn(128, 64, device="cuda")
    c = torch.full((256, 64), -1.0, device="cuda")
    views = []
    for t in (a, b, c):
        st, v, _, _ = import_tensor(t, CONTIGUOUS | WRITABLE, s, native)
        ok(st, "importing a torch tensor")
        assert v.data == t.data_ptr() and v.device.type == 1, (v.data, t.data_ptr())
        views.append(v)
    va, vb, vc = views
    ok(lib.xdev_gemm(F32, 0, 0, C.c_int64(64), C.c_int64(256), C.c_int64(128), C.c_double(1.0),
                     C.c_void_p(vb.data), C.c_int64(64), C.c_void_p(va.data), C.c_int64(128),
                     C.c_double(0.0), C.c_void_p(vc.data), C.c_int64(64), s), "xdev_gemm")
    # torch reads C after xdev's stream: its stream waits on the device
    torch.cuda.current_stream().wait_stream(torch.cuda.ExternalStream(native))
    want = a.double() @ b.double()
    err = ((c.double() - want).abs().max() / want.abs().max()).item()
    assert err < 1e-5, f"xdev's GEMM into torch's tensor: relative error {err}"
    for v in views:
        ok(lib.xdev_memory_unregister(C.c_void_p(v.base)), "xdev_memory_unregister")
    ok(lib.xdev_stream_destroy(s), "xdev_stream_destroy")
    print(f"interop_torch: torch -> xdev: xdev_gemm (256x128 by 128x64) wrote into torch's "
          f"tensor in place, relative error {err:.1e} against torch in f64")


class Exported:
    """What torch.from_dlpack takes: __dlpack__ hands xdev's tensor over,
    ordering the stream torch names after xdev's producer stream."""

    def __init__(self, buf, n, stream):
        self.buf, self.n, self.stream = buf, n, stream
        self.waited_for = None

    def __dlpack__(self, stream=None, max_version=None, **kw):
        consumer = None
        if stream is None:  # DLPack: None means CUDA's legacy default stream
            stream = 1
        if stream != -1:  # -1: the consumer asks for no ordering
            consumer = C.c_void_p()
            handle = stream  # 1 and 2 are the legacy and per-thread default streams
            ok(lib.xdev_stream_wrap_native(CUDA0, C.c_void_p(handle), C.byref(consumer)),
               "xdev_stream_wrap_native")
            self.waited_for = stream
        shape = (C.c_int64 * 1)(self.n)
        managed = C.c_void_p()
        versioned = max_version is not None and max_version[0] >= 1
        if versioned:
            ok(lib.xdev_dlpack_export(self.buf, 1, shape, None, F32, C.c_uint64(0), self.stream,
                                      consumer, C.byref(managed)), "xdev_dlpack_export")
        else:
            ok(lib.xdev_dlpack_export_unversioned(self.buf, 1, shape, None, F32, self.stream,
                                                  consumer, C.byref(managed)),
               "xdev_dlpack_export_unversioned")
        self.format = "DLPack 1.x" if versioned else "DLPack 0.x"
        if consumer is not None:
            ok(lib.xdev_stream_destroy(consumer), "destroying the wrapper")
        return capsule.new(managed.value, versioned)

    def __dlpack_device__(self):
        return (2, 0)  # kDLCUDA, device 0


def xdev_to_torch():
    s, _ = new_stream()
    n = 1 << 20
    buf = C.c_void_p()
    ok(lib.xdev_malloc_device(CUDA0, C.byref(buf), C.c_size_t(4 * n)), "xdev_malloc_device")
    # 3.0 everywhere, copied on xdev's stream; handed over without waiting
    host_in = (C.c_float * n)(*([3.0] * n))
    ok(lib.xdev_memcpy_async(buf, host_in, C.c_size_t(4 * n), s), "xdev_memcpy_async")
    ex = Exported(buf, n, s)
    t = torch.from_dlpack(ex)
    assert t.data_ptr() == buf.value and t.is_cuda
    t.mul_(2)  # on torch's stream, after xdev's fill (the handshake)
    torch.cuda.synchronize()
    host = (C.c_float * 4)()
    ok(lib.xdev_memcpy(host, C.c_void_p(buf.value + 4 * (n - 4)), C.c_size_t(16)), "xdev_memcpy")
    assert list(host) == [6.0] * 4, list(host)
    ok(lib.xdev_free(buf), "xdev_free while torch holds it")
    assert kind_of(buf.value) == DEVICE_MEMORY, "freed while torch held it"
    # round trip: torch gives xdev's memory back to xdev
    st, v, cap, ptr = import_tensor(t, CONTIGUOUS, s, _stream_handle(s))
    ok(st, "importing xdev's own memory back from torch")
    assert v.data == buf.value
    st2 = lib.xdev_dlpack_import(C.c_void_p(ptr), 0, s, C.byref(View()))
    fails(st2, "consumed once", "importing the same capsule twice")
    ok(lib.xdev_memory_unregister(C.c_void_p(v.base)), "giving the round trip back")
    del t, cap
    gc.collect()
    torch.cuda.synchronize()
    assert kind_of(buf.value) == HOST_MEMORY, "still held after torch let go"
    ok(lib.xdev_stream_destroy(s), "xdev_stream_destroy")
    print(f"interop_torch: xdev -> torch ({ex.format}, torch named stream {ex.waited_for}): "
          "torch.from_dlpack saw xdev's copy (its stream waited for xdev's), torch's in-place "
          "doubling reached xdev, xdev -> torch -> xdev came back to the same memory, xdev_free "
          "waited for torch to let go")


def _stream_handle(s):
    native = C.c_void_p()
    ok(lib.xdev_stream_native_handle(s, C.byref(native)), "xdev_stream_native_handle")
    return native.value or 0


def bad_input():
    s, native = new_stream()
    x = torch.randn(64, 32, device="cuda")
    st, _, _, _ = import_tensor(x.t(), CONTIGUOUS, s, native)
    fails(st, "not contiguous", "importing a transposed tensor as contiguous")
    seen = "a transposed tensor where contiguous was required"
    if torch.cuda.device_count() > 1 and os.environ.get("XDEV_VISIBLE_DEVICES") == "0":
        y = torch.randn(16, device="cuda:1")  # a GPU xdev was told not to see
        with torch.cuda.device(1):  # torch exports from the current device only
            st, _, _, _ = import_tensor(y, 0, None, 0)
        fails(st, "cannot see", "importing a tensor of a GPU xdev does not see")
        seen += ", a tensor on a GPU xdev cannot see"
    ok(lib.xdev_stream_destroy(s), "xdev_stream_destroy")
    print(f"interop_torch: refused: {seen}")


torch_to_xdev()
xdev_to_torch()
bad_input()
print("interop_torch: ok")
