# SPDX-License-Identifier: Apache-2.0
"""tests/python/test_package.py - the xdev Python package (python/xdev) on the
CPU backend with NumPy: devices, streams and events, Memory round trips,
DLPack both ways with NumPy (zero-copy: a write through one side is seen by
the other), a kernel written once in C source compiled and launched on a
NumPy array's memory, elementwise, the memory snapshot and view written,
seeding reproducible, and failures raised as XdevError with xdev's status and
message. Run by ctest (python) with PYTHONPATH=python and XDEV_LIBRARY at the
built libxdev, XDEV_BACKEND=cpu, XDEV_CPU_DEVICES=2; prints one line per
part and "ok" last."""
import gc
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

import xdev

SAXPY = r"""
#include <xdev/kernel_lang.h>
XDEV_KERNEL(saxpy, XDEV_PARAM(long, n), XDEV_PARAM(float, a), XDEV_PTR(const float, x),
            XDEV_PTR(float, y)) {
    long i = xdev_global_id(0);
    if (i < n) y[i] = a * x[i] + y[i];
}
"""


def raises(exc, fn, *needles):
    """fn() must raise exc with every needle in its message; returns the exception."""
    try:
        fn()
    except exc as e:
        for n in needles:
            assert n in str(e), f"expected '{n}' in the {exc.__name__} message: {e}"
        return e
    raise AssertionError(f"expected {exc.__name__} mentioning {needles}")


def library():
    path, how = xdev.library_path()
    assert how == "XDEV_LIBRARY" and path == os.environ["XDEV_LIBRARY"], (path, how)
    # a wrong XDEV_LIBRARY is an import error naming it, not a silent fallback
    env = dict(os.environ, XDEV_LIBRARY="/nonexistent/libxdev.so.0")
    r = subprocess.run([sys.executable, "-c", "import xdev"], env=env, capture_output=True,
                       text=True)
    assert r.returncode != 0 and "/nonexistent/libxdev.so.0" in r.stderr, r.stderr
    assert "LibraryNotFound" in r.stderr, r.stderr
    # python -m xdev names the library and the devices
    r = subprocess.run([sys.executable, "-m", "xdev"], capture_output=True, text=True)
    assert r.returncode == 0 and "(XDEV_LIBRARY)" in r.stdout and "cpu:1:" in r.stdout, r
    print(f"python: libxdev {xdev.version()} from {path} ({how}); a wrong XDEV_LIBRARY is "
          "refused by name")


def devices():
    assert xdev.default_device_type() == "cpu"
    assert xdev.device_count() == 2 and xdev.device_count("cpu") == 2
    assert xdev.is_available("cpu")
    assert xdev.current_device() == xdev.Device("cpu:0")
    xdev.set_device("cpu:1")
    assert str(xdev.current_device("cpu")) == "cpu:1"
    xdev.set_device(xdev.Device("cpu", 0))
    p = xdev.get_device_properties("cpu:1")
    assert p.name and p.multiprocessor_count >= 1 and p.total_memory > 0, p
    free, total = xdev.mem_get_info("cpu:0")
    assert 0 < free <= total
    xdev.synchronize()
    xdev.synchronize("cpu:1")
    print(f"python: devices: {xdev.device_count()} cpu, current {xdev.current_device()}, "
          f"properties '{p.name}', {p.multiprocessor_count} cores")


def streams_events():
    s = xdev.Stream("cpu:1")
    s.name = "copy"
    assert s.name == "copy" and s.device == xdev.Device("cpu:1")
    before = xdev.current_stream("cpu:1")
    with s:
        assert xdev.current_stream("cpu:1") == s and xdev.current_device() == xdev.Device("cpu:1")
    assert xdev.current_stream("cpu:1") == before and xdev.current_device().index == 0
    m = xdev.Memory(1 << 20, "cpu:1")
    start, end = xdev.Event(enable_timing=True), xdev.Event(enable_timing=True)
    start.record(s)
    m.fill_bytes(7, stream=s)
    end.record(s)
    other = xdev.Stream("cpu:1")
    other.wait_event(end)
    other.synchronize()
    end.synchronize()
    assert end.query() and end.device == xdev.Device("cpu:1")
    # (not s.query() here: on the CPU backend the stream counts the record as done
    # only just after the event fires - a finding reported to the lead)
    s.synchronize()
    assert s.query()
    ms = start.elapsed_time(end)
    assert ms >= 0.0
    assert m.to_bytes()[:3] == b"\x07\x07\x07"
    m.free()
    s.close()
    other.close()
    print(f"python: streams and events: a named stream made current and restored, a fill "
          f"timed at {ms:.3f} ms, another stream ordered after it by an event")


def memory():
    m = xdev.Memory(64, "cpu:1")
    assert m.size == 64 and m.device == xdev.Device("cpu:1") and m.ptr
    src = np.arange(16, dtype=np.float32)
    m.copy_from(src)
    back = m.copy_to(np.zeros(16, dtype=np.float32))
    assert np.array_equal(back, src), back
    assert m.to_bytes() == src.tobytes()
    m.copy_from(b"\xff\xff\xff\xff", offset=60)
    assert m.to_bytes()[60:] == b"\xff" * 4
    raises(ValueError, lambda: m.copy_from(np.zeros(17, dtype=np.float32)), "past the end")
    raises(TypeError, lambda: m.copy_to(b"read only"), "writable")
    kind, dev, base, size = xdev.pointer_info(m.ptr)
    assert (kind, dev, base, size) == ("device", xdev.Device("cpu:1"), m.ptr, 64)
    p = m.ptr
    m.free()
    assert xdev.pointer_info(p)[0] == "host"
    t = xdev.tensor(np.arange(6, dtype=np.int64).reshape(2, 3), "cpu:0")
    assert t.shape == (2, 3) and t.dtype == "int64" and t.nbytes == 48
    assert t.numpy().tolist() == [[0, 1, 2], [3, 4, 5]]
    print("python: memory: Memory round trip through the buffer protocol (NumPy, bytes), "
          "bounds checked, freed; Tensor copies with shape and dtype")


def dlpack_numpy_to_xdev():
    a = np.arange(8, dtype=np.float32)
    t = xdev.from_dlpack(a)
    assert t.data_ptr == a.ctypes.data, "from_dlpack copied"
    assert t.device == xdev.Device("cpu:0") and t.shape == (8,) and t.dtype == "float32"
    # written through xdev, seen by NumPy: the same memory
    t.copy_from(np.full(8, 3.5, dtype=np.float32))
    assert a.tolist() == [3.5] * 8, a
    # written by NumPy, seen by xdev
    a[2] = -1.0
    assert t.numpy()[2] == -1.0
    t.release()
    assert xdev.pointer_info(a.ctypes.data)[0] == "host", "still registered after release"
    # a transposed view where contiguous memory is required: xdev's refusal
    e = raises(xdev.XdevError, lambda: xdev.from_dlpack(np.zeros((3, 4), np.float32).T,
                                                        contiguous=True), "not contiguous")
    assert e.status == 1 and e.status_name == "XDEV_ERROR_INVALID_VALUE", e
    print("python: numpy -> xdev: from_dlpack took NumPy's memory (no copy): xdev's write seen "
          "by NumPy and NumPy's by xdev; a transposed array refused where contiguous is required")


def dlpack_xdev_to_numpy():
    t = xdev.tensor(np.arange(10, 16, dtype=np.int32).reshape(2, 3))
    b = np.from_dlpack(t)
    assert b.ctypes.data == t.data_ptr, "numpy.from_dlpack copied"
    assert b.tolist() == [[10, 11, 12], [13, 14, 15]]
    # written through xdev after the export, seen by NumPy
    t.copy_from(np.full((2, 3), 99, dtype=np.int32))
    assert b[1, 2] == 99, b
    if b.flags.writeable:  # NumPy >= 2.1 (before, from_dlpack's arrays are read-only)
        b[0, 0] = -5
        assert t.numpy()[0, 0] == -5
    # an xdev export coming back (a bare capsule; through NumPy where NumPy
    # re-exports, >= 2.1: before, it refuses its read-only from_dlpack arrays)
    for mv in (None, (1, 0)):  # DLPack 0.x and 1.x capsules
        again = xdev.from_dlpack(t.__dlpack__(max_version=mv))
        assert again.data_ptr == t.data_ptr and again.shape == (2, 3) and again.dtype == "int32"
        again.release()
    if b.flags.writeable:
        again = xdev.from_dlpack(b)
        assert again.data_ptr == t.data_ptr
        again.release()
    p = t.data_ptr
    t.release()  # the free waits for NumPy to let go
    assert xdev.pointer_info(p)[0] == "device", "freed while NumPy held it"
    assert b[0, 1] == 99
    del b
    gc.collect()
    assert xdev.pointer_info(p)[0] == "host", "still held after NumPy let go"
    print("python: xdev -> numpy: numpy.from_dlpack wrapped xdev's memory (no copy) and saw "
          "xdev's later write; an xdev export taken back came back to the same memory; the free "
          "waited for NumPy")


def kernel_on_numpy():
    n = 1000
    x = np.arange(n, dtype=np.float32)
    y = np.ones(n, dtype=np.float32)
    m = xdev.compile(SAXPY, "cpu:0", name="saxpy_py")
    saxpy = m.saxpy
    assert saxpy.nparams == 4 and saxpy.param_sizes == (8, 4, 8, 8), saxpy.param_sizes
    tx, ty = xdev.from_dlpack(x), xdev.from_dlpack(y, writable=True)
    saxpy((n + 255) // 256, 256, n, 2.0, tx, ty)
    xdev.synchronize()
    assert np.array_equal(y, 2.0 * x + 1.0), y[:4]
    # the same through a stream and explicit NumPy scalars
    s = xdev.Stream("cpu:0")
    saxpy.launch(4, 256, np.int64(n), np.float32(-1.0), tx, ty, stream=s)
    s.synchronize()
    assert np.array_equal(y, x + 1.0), y[:4]
    # Python numbers packed as the source declares them: 3 for 'float a' is 3.0f
    assert saxpy.declared == [("long", "n"), ("float", "a"), None, None], saxpy.declared
    y[:] = 0.0
    saxpy(4, 256, n, 3, tx, ty)
    xdev.synchronize()
    assert np.array_equal(y, 3.0 * x), y[:4]
    raises(TypeError, lambda: saxpy(4, 256, 1000.0, 3, tx, ty), "'n'", "long")
    # the launch checks, raised with xdev's message
    e = raises(xdev.XdevError, lambda: saxpy(1, 1, n, 2.0, tx), "argument")
    assert e.status_name == "XDEV_ERROR_INVALID_VALUE" and e.call == "xdev_launch_kernel"
    other = xdev.Memory(4 * n, "cpu:1")  # another device's memory
    e = raises(xdev.XdevError, lambda: saxpy(1, 1, n, 2.0, tx, other), "saxpy")
    print(f"python: kernel: cpu:1's memory to a kernel of cpu:0: {e}")
    raises(xdev.XdevError, lambda: m["nothing"], "nothing")
    tx.release()
    ty.release()
    s.close()
    m.unload()
    print("python: kernel: saxpy compiled from a C source string and launched on NumPy's "
          "arrays (no copy), on the current stream and on a stream; bad arguments refused")


def elementwise_numpy():
    x = np.arange(64, dtype=np.float32)
    y = np.full(64, 0.5, dtype=np.float32)
    out = np.zeros(64, dtype=np.float32)
    tx, ty, to = (xdev.from_dlpack(v) for v in (x, y, out))
    xdev.elementwise("in0 * 2.5f + in1", to, tx, ty)
    xdev.synchronize()
    assert np.array_equal(out, x * 2.5 + 0.5), out[:4]
    d = xdev.tensor(np.arange(5, dtype=np.int64))
    xdev.elementwise("in0 * in0", d, d)
    assert d.numpy().tolist() == [0, 1, 4, 9, 16]
    raises(xdev.XdevError, lambda: xdev.elementwise("in0; in1", to, tx, ty), "expression")
    for t in (tx, ty, to):
        t.release()
    print("python: elementwise: 'in0 * 2.5f + in1' into a NumPy array, 'in0 * in0' in place "
          "on int64 xdev memory; a statement refused")


def snapshot_view(tmp):
    m = xdev.Memory(3 << 20, "cpu:1")
    snap = xdev.memory_snapshot()
    segs = [s for s in snap["segments"] if s["device"] == "cpu:1"]
    assert any(b["address"] == m.ptr and b["state"] == "active_allocated"
               for s in segs for b in s["blocks"]), segs
    path = os.path.join(tmp, "snap.json")
    xdev.memory_snapshot_write(path)
    with open(path) as f:
        assert "segments" in json.load(f)
    html = xdev.memory_view_html(snap)
    assert html.lstrip().lower().startswith("<!doctype html") and "cpu:1" in html
    page = os.path.join(tmp, "view.html")
    xdev.memory_view_write(page)
    assert os.path.getsize(page) > 1000
    raises(xdev.XdevError, lambda: xdev.memory_view_html("{not json"), "not JSON")
    e = raises(xdev.XdevError, lambda: xdev.memory_view_write(os.path.join(tmp, "no/such/dir/v")),
               "no/such/dir")
    assert e.status_name == "XDEV_ERROR_IO"
    m.free()
    print(f"python: memory snapshot ({len(snap['segments'])} segments) and view written; "
          "bad JSON and an unwritable path refused")


def seeding():
    xdev.manual_seed(1234)
    assert xdev.initial_seed() == 1234
    a = xdev.rand(1000).numpy()
    b = xdev.rand(1000).numpy()
    assert not np.array_equal(a, b) and 0.0 <= a.min() and a.max() < 1.0
    xdev.manual_seed(1234)
    assert np.array_equal(xdev.rand(1000).numpy(), a), "manual_seed did not repeat the numbers"
    state = xdev.get_rng_state()
    c = xdev.randn(500, "float64").numpy()
    xdev.set_rng_state(state)
    assert np.array_equal(xdev.randn(500, "float64").numpy(), c)
    xdev.manual_seed_all(7)
    assert xdev.initial_seed("cpu:1") == 7
    one = xdev.rand(8, device="cpu:1").numpy()
    xdev.manual_seed_all(7)
    assert np.array_equal(xdev.rand(8, device="cpu:1").numpy(), one)
    xdev.seed()
    raises(xdev.XdevError, lambda: xdev.set_rng_state(b"short"), "state")
    print("python: seeding: manual_seed and manual_seed_all repeat the numbers, get/set_rng_state "
          "restore them; a short state refused")


def compile_errors():
    bad = "#include <xdev/kernel_lang.h>\nXDEV_KERNEL(broken, XDEV_PTR(int, out)) " \
          "{ out[0] = undeclared_thing; }\n"
    e = raises(xdev.XdevError, lambda: xdev.compile(bad, "cpu:0"), "undeclared_thing")
    assert e.status == 15 and e.status_name == "XDEV_ERROR_COMPILE", e
    assert "undeclared_thing" in xdev.compile_log()
    raises(xdev.XdevError, lambda: xdev.Device("nonsense:0"), "nonsense")
    raises(xdev.XdevError, lambda: xdev.Memory(16, "cpu:5"), "cpu:5")
    print(f"python: errors: XdevError carries status and message ({e.status_name}: "
          f"'{e.message[:60]}...')")


def docs_example():
    """docs/python.md's example blocks (marked docs-test: python) run as written."""
    page = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "docs",
                        "python.md")
    lines, blocks, i = open(page).read().split("\n"), [], 0
    while i < len(lines):
        if lines[i].strip() == "<!-- docs-test: python -->" and lines[i + 1] == "```python":
            j = lines.index("```", i + 2)
            blocks.append("\n".join(lines[i + 2:j]))
            i = j
        i += 1
    assert blocks, "docs/python.md has no block marked docs-test: python"
    for b in blocks:
        exec(compile(b, page, "exec"), {"__name__": "docs_example"})
    print(f"python: docs/python.md: {len(blocks)} example block(s) ran")


def main():
    library()
    devices()
    streams_events()
    memory()
    dlpack_numpy_to_xdev()
    dlpack_xdev_to_numpy()
    kernel_on_numpy()
    elementwise_numpy()
    with tempfile.TemporaryDirectory() as tmp:
        snapshot_view(tmp)
    seeding()
    compile_errors()
    docs_example()
    print("python: ok")


main()
