# SPDX-License-Identifier: Apache-2.0
"""tests/gpu/python_torch.py - the xdev Python package with PyTorch on CUDA
(tests/gpu/run.sh step `python`; PYTHONPATH=python, XDEV_LIBRARY at the
build's libxdev, XDEV_BACKEND=cuda).

One kernel written once (C source in xdev's dialect) is compiled for cuda:0
(NVRTC) and for cpu:0 (the C compiler) and launched on a torch CUDA tensor
and on a NumPy array, both taken with xdev.from_dlpack (no copy): the results
must agree with torch's and NumPy's own. The stream handshake both ways:
torch -> xdev (torch's pending work ordered before xdev's stream: a tensor
torch filled without a host wait), xdev -> torch (torch's stream waits for
xdev's: a long queue of elementwise launches on an xdev stream, handed to
torch.from_dlpack and doubled in place by torch at once). elementwise on torch
tensors; xdev.empty's memory freed only after torch lets go. Prints one line
per part, "ok" last; exits 77 without PyTorch or a CUDA device."""
import gc
import sys

try:
    import torch
except ImportError:
    print("SKIP: PyTorch not installed")
    sys.exit(77)
if not torch.cuda.is_available():
    print("SKIP: no CUDA device for PyTorch")
    sys.exit(77)
import numpy as np  # noqa: E402

import xdev  # noqa: E402

SAXPY = r"""
#include <xdev/kernel_lang.h>
XDEV_KERNEL(saxpy, XDEV_PARAM(long, n), XDEV_PARAM(float, a), XDEV_PTR(const float, x),
            XDEV_PTR(float, y)) {
    long i = xdev_global_id(0);
    if (i < n) y[i] = a * x[i] + y[i];
}
"""
CUDA0, CPU0 = xdev.Device("cuda:0"), xdev.Device("cpu:0")


def kernel_written_once():
    n = 1 << 20
    s = xdev.Stream(CUDA0)
    gpu = xdev.compile(SAXPY, CUDA0)
    torch.manual_seed(0)
    x = torch.randn(n, device="cuda")
    y = torch.randn(n, device="cuda")  # torch's work still queued: the handshake orders it
    want = 2.5 * x + y
    tx, ty = xdev.from_dlpack(x, stream=s), xdev.from_dlpack(y, stream=s, writable=True)
    assert tx.data_ptr == x.data_ptr() and tx.device == CUDA0
    gpu.saxpy((n + 255) // 256, 256, n, 2.5, tx, ty, stream=s)
    torch.cuda.current_stream().wait_stream(torch.cuda.ExternalStream(s.native_handle))
    err = (y - want).abs().max().item()
    assert err < 1e-5, f"saxpy on torch's tensor: max error {err}"
    tx.release()
    ty.release()
    # the same source on the CPU, on NumPy's memory
    cpu = xdev.compile(SAXPY, CPU0)
    xn, yn = x.cpu().numpy(), np.ones(n, dtype=np.float32)
    cpu.saxpy((n + 255) // 256, 256, n, 2.5, xdev.from_dlpack(xn), xdev.from_dlpack(yn))
    xdev.synchronize(CPU0)
    assert np.allclose(yn, 2.5 * xn + 1.0), yn[:4]
    s.close()
    print(f"python_torch: saxpy written once: on a torch CUDA tensor (cuda:0, NVRTC; max error "
          f"{err:.1e}) and on a NumPy array (cpu:0), both without a copy")


def xdev_to_torch_handshake():
    n = 1 << 22
    s = xdev.Stream(CUDA0)
    t = xdev.empty(n, "float32", CUDA0)
    t.memory.fill_bytes(0, stream=s)
    for _ in range(200):  # a queue long enough that torch would run ahead without the wait
        xdev.elementwise("in0 + 1.0f", t, t, stream=s)
    t.stream = s  # produced on s: the export orders torch's stream after it
    tt = torch.from_dlpack(t)
    assert tt.data_ptr() == t.data_ptr and tt.is_cuda
    tt.mul_(2)  # on torch's current stream, at once
    got = tt[-4:].tolist()
    assert got == [400.0] * 4, f"torch ran before xdev's stream finished: {got}"
    p = t.data_ptr
    t.release()  # the free waits for torch to let go
    assert xdev.pointer_info(p)[0] == "device"
    del tt
    gc.collect()
    torch.cuda.synchronize()
    assert xdev.pointer_info(p)[0] == "host", "still held after torch let go"
    s.close()
    print("python_torch: xdev -> torch: torch's stream waited for 200 launches on xdev's stream "
          "(no host wait), torch's in-place doubling saw them; the free waited for torch")


def elementwise_torch():
    a = torch.arange(1000, device="cuda", dtype=torch.float64)
    out = torch.empty_like(a)
    xdev.elementwise("in0 * in0 + 1.0", xdev.from_dlpack(out), xdev.from_dlpack(a))
    xdev.synchronize()  # xdev's launch done before torch reads
    assert torch.equal(out, a * a + 1.0)
    e = None
    try:
        xdev.from_dlpack(torch.zeros(4, 8, device="cuda").t(), contiguous=True)
    except xdev.XdevError as err:
        e = err
    assert e is not None and "not contiguous" in e.message, e
    print(f"python_torch: elementwise on torch tensors; a transposed tensor refused: {e}")


def seeding():
    xdev.manual_seed(42)
    a = xdev.rand(1000, device=CUDA0).numpy()
    xdev.manual_seed(42)
    assert np.array_equal(xdev.rand(1000, device=CUDA0).numpy(), a)
    print("python_torch: seeding reproducible on cuda:0")


print(f"python_torch: xdev {xdev.version()} ({xdev.library_path()[0]}), torch {torch.__version__}")
kernel_written_once()
xdev_to_torch_handshake()
elementwise_torch()
seeding()
print("python_torch: ok")
