# SPDX-License-Identifier: Apache-2.0
"""xdev._interop - Tensor: elements in device memory with a shape and a dtype,
and DLPack both ways with the stream handshake of the Python array API.

Taking (from_dlpack): the producer's __dlpack__ is called with the stream the
consumer will use (a CUDA/HIP stream's native handle; None on the CPU), so
the producer orders its pending work before it; xdev registers the memory
(xdev_dlpack_import) and the Tensor gives it back (xdev_memory_unregister,
which calls the producer's deleter) when released or collected.
Giving (Tensor.__dlpack__): xdev_dlpack_export with the consumer's stream
wrapped (xdev_stream_wrap_native), so the consumer's stream waits, on the
device, for the stream that produced the data - no host wait."""
import ctypes as C
import math

from ._core import CPU, CUDA, HIP, Device, Memory, Stream, _dev, _stream_handle, \
    current_stream, device_count, get_device_properties
from ._dlpack import HostBuffer, is_capsule, mark_used, new_capsule, open_capsule
from ._lib import View, call, fail, lib

# xdev_dtype_t by name, with DLPack's (code, bits) and the buffer protocol's format
DTYPES = {
    "float32": (0, (2, 32), "f"), "float64": (1, (2, 64), "d"),
    "complex64": (2, (5, 64), "Zf"), "complex128": (3, (5, 128), "Zd"),
    "float16": (4, (2, 16), "e"), "bfloat16": (5, (4, 16), None),
    "int8": (6, (0, 8), "b"), "int16": (7, (0, 16), "h"), "int32": (8, (0, 32), "i"),
    "int64": (9, (0, 64), "q"), "uint8": (10, (1, 8), "B"), "uint16": (11, (1, 16), "H"),
    "uint32": (12, (1, 32), "I"), "uint64": (13, (1, 64), "Q"),
}
_BY_CODE = {v[0]: k for k, v in DTYPES.items()}
_ITEMSIZE = {k: v[1][1] // 8 for k, v in DTYPES.items()}
# buffer-protocol formats (struct module codes, native sizes) to dtypes
_FORMATS = {"f": "float32", "d": "float64", "e": "float16", "Zf": "complex64",
            "Zd": "complex128", "b": "int8", "B": "uint8", "h": "int16", "H": "uint16",
            "c": "uint8"}
for _c, _n in (("i", "int"), ("l", "long"), ("q", "longlong")):
    _FORMATS[_c] = f"int{8 * C.sizeof(getattr(C, 'c_' + _n))}"
    _FORMATS[_c.upper()] = f"uint{8 * C.sizeof(getattr(C, 'c_' + _n))}"

KDL_CPU, KDL_CUDA, KDL_CUDA_HOST, KDL_ROCM, KDL_ROCM_HOST = 1, 2, 3, 10, 11
_DL_TYPE = {CPU: KDL_CPU, CUDA: KDL_CUDA, HIP: KDL_ROCM}
_XDEV_TYPE = {KDL_CPU: CPU, KDL_CUDA_HOST: CPU, KDL_ROCM_HOST: CPU, KDL_CUDA: CUDA, KDL_ROCM: HIP}
CONTIGUOUS, WRITABLE = 1, 2  # XDEV_DLPACK_CONTIGUOUS, XDEV_DLPACK_WRITABLE
READ_ONLY_FLAG = 1  # DLPACK_FLAG_BITMASK_READ_ONLY


def dtype_name(dtype):
    """A dtype's name from a name, an xdev_dtype_t or anything with a .name /
    str() that names one (numpy.float32, numpy.dtype('int32'), torch.float32)."""
    if isinstance(dtype, int):
        if dtype in _BY_CODE:
            return _BY_CODE[dtype]
    else:
        n = getattr(dtype, "__name__", None) or getattr(dtype, "name", None) or str(dtype)
        n = str(n).replace("torch.", "")
        if n in DTYPES:
            return n
    raise ValueError(f"xdev: unknown dtype {dtype!r}; one of {', '.join(DTYPES)}")


def _contiguous_strides(shape):
    out, acc = [], 1
    for n in reversed(shape):
        out.append(acc)
        acc *= n
    return tuple(reversed(out))


class _Registration:
    """Another library's memory registered by an import: given back once."""

    def __init__(self, base):
        self.base = base

    def release(self):
        if self.base:
            b, self.base = self.base, None
            call("xdev_memory_unregister", C.c_void_p(b))

    def __del__(self):
        try:
            self.release()
        except Exception:
            pass


class Tensor:
    """Elements of one dtype in device memory: data_ptr, shape, strides (in
    elements), dtype (a name: "float32"), device. Made by xdev.empty / zeros
    / tensor (xdev owns the memory) or xdev.from_dlpack (another library
    does; release() gives it back, as does collecting the last reference).
    Any DLPack consumer takes it: numpy.from_dlpack(t), torch.from_dlpack(t)."""

    def __init__(self, ptr, shape, dtype, device, strides=None, owner=None, read_only=False,
                 source=None):
        self.data_ptr, self.shape, self.dtype = int(ptr), tuple(int(n) for n in shape), dtype
        self.strides = tuple(strides) if strides is not None else _contiguous_strides(self.shape)
        self.device, self.read_only = device, read_only
        self._owner, self._source = owner, source
        self.stream = None  # where the data is produced: __dlpack__ orders consumers after it

    @classmethod
    def _over(cls, memory, shape, dtype):
        dtype = dtype_name(dtype)
        shape = (shape,) if isinstance(shape, int) else tuple(shape)
        need = math.prod(shape) * _ITEMSIZE[dtype]
        if need > memory.size:
            raise ValueError(f"xdev: a {dtype} tensor of shape {shape} needs {need} bytes; the "
                             f"memory has {memory.size}")
        return cls(memory.ptr, shape, dtype, memory.device, owner=memory)

    @property
    def itemsize(self):
        return _ITEMSIZE[self.dtype]

    @property
    def numel(self):
        return math.prod(self.shape)

    @property
    def nbytes(self):
        return self.numel * self.itemsize

    @property
    def ndim(self):
        return len(self.shape)

    @property
    def is_contiguous(self):
        return all(s == c for s, c, n in zip(self.strides, _contiguous_strides(self.shape),
                                             self.shape) if n != 1)

    @property
    def memory(self):
        """The Memory that owns the elements, or None for another library's."""
        return self._owner if isinstance(self._owner, Memory) else None

    def _need_contiguous(self, what):
        if not self.is_contiguous:
            raise ValueError(f"xdev: {what}: the tensor (shape {self.shape}, strides "
                             f"{self.strides}) is not contiguous")

    def copy_from(self, src):
        """Copy a C-contiguous bytes-like object of exactly nbytes (a NumPy
        array of the same size and dtype) into the tensor, blocking."""
        self._need_contiguous("copy_from")
        with HostBuffer(src, writable=False) as (addr, n):
            if n != self.nbytes:
                raise ValueError(f"xdev: copy_from: {n} bytes into a tensor of {self.nbytes}")
            if n:
                call("xdev_memcpy", C.c_void_p(self.data_ptr), C.c_void_p(addr), n)
        return self

    def copy_to(self, dst):
        """Copy the tensor into a writable bytes-like object of exactly nbytes."""
        self._need_contiguous("copy_to")
        with HostBuffer(dst, writable=True) as (addr, n):
            if n != self.nbytes:
                raise ValueError(f"xdev: copy_to: a tensor of {self.nbytes} bytes into {n}")
            if n:
                call("xdev_memcpy", C.c_void_p(addr), C.c_void_p(self.data_ptr), n)
        return dst

    def numpy(self):
        """A copy in a new NumPy array on the host (any device)."""
        import numpy as np
        if self.dtype == "bfloat16":
            raise TypeError("xdev: NumPy has no bfloat16")
        return self.copy_to(np.empty(self.shape, dtype=self.dtype))

    def to_bytes(self):
        return bytes(self.copy_to(bytearray(self.nbytes)))

    def release(self):
        """Give the memory back now: another library's (after the work queued on
        it) or xdev's own (freed, stream-ordered). Later use is undefined."""
        owner, self._owner = self._owner, None
        if isinstance(owner, Memory):
            owner.free()
        elif owner is not None:
            owner.release()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.release()

    # ---------------------------------------------------------- DLPack producer
    def __dlpack_device__(self):
        if self.device.type == CPU:
            return (KDL_CPU, 0)
        if self.device.type not in _DL_TYPE:
            raise BufferError(f"xdev: {self.device} has no DLPack device type")
        return (_DL_TYPE[self.device.type], get_device_properties(self.device).physical_index)

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        """The DLPack capsule for this tensor. `stream` is the consumer's (the
        array API's rule: on CUDA None is the legacy default stream 1, 2 the
        per-thread one, -1 no ordering; on the CPU only None): it waits, on the
        device, for the stream the data was produced on."""
        if copy:
            raise BufferError("xdev: __dlpack__(copy=True) is not supported: the tensor is "
                              "exported without a copy")
        if dl_device is not None and tuple(dl_device) != self.__dlpack_device__():
            raise BufferError(f"xdev: the tensor is on {self.__dlpack_device__()}, not "
                              f"{tuple(dl_device)}")
        if self._source is not None:
            # another library's memory: its producer exports it again (xdev
            # exports only memory it allocated)
            if max_version is not None:
                try:
                    return self._source.__dlpack__(stream=stream, max_version=max_version)
                except TypeError:  # a producer before DLPack 1.0
                    pass
            return self._source.__dlpack__(stream=stream)
        if self._owner is None:
            raise BufferError("xdev: the tensor was released")
        versioned = max_version is not None and tuple(max_version)[0] >= 1
        consumer = None
        if self.device.type != CPU and stream != -1:
            if stream is None and self.device.type == CUDA:
                stream = 1  # the legacy default stream
            if stream == 0 or stream is None:  # HIP's default stream
                consumer = Stream(_handle=_default_handle(self.device), _owned=False)
            else:
                consumer = Stream.wrap_native(self.device, stream)
        shape = (C.c_int64 * max(self.ndim, 1))(*self.shape)
        strides = (C.c_int64 * max(self.ndim, 1))(*self.strides)
        managed = C.c_void_p()
        producer = _stream_handle(self.stream)
        ch = consumer.handle if consumer is not None else None
        dt = DTYPES[self.dtype][0]
        try:
            if versioned:
                flags = READ_ONLY_FLAG if self.read_only else 0
                call("xdev_dlpack_export", C.c_void_p(self.data_ptr), self.ndim, shape, strides,
                     dt, flags, producer, ch, C.byref(managed))
            else:
                call("xdev_dlpack_export_unversioned", C.c_void_p(self.data_ptr), self.ndim,
                     shape, strides, dt, producer, ch, C.byref(managed))
        finally:
            if consumer is not None:
                consumer.close()
        return new_capsule(managed.value, versioned)

    def __repr__(self):
        return (f"<xdev.Tensor {self.dtype}{list(self.shape)} at {self.data_ptr:#x} on "
                f"{self.device}>")


def _default_handle(device):
    h = C.c_void_p()
    call("xdev_stream_default", device._c(), C.byref(h))
    return h.value


# ------------------------------------------------------------------ making tensors


def empty(shape, dtype="float32", device=None):
    """A new tensor in xdev memory (uninitialised)."""
    dtype = dtype_name(dtype)
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    return Tensor._over(Memory(math.prod(shape) * _ITEMSIZE[dtype], device), shape, dtype)


def zeros(shape, dtype="float32", device=None, stream=None):
    t = empty(shape, dtype, device)
    t.memory.fill_bytes(0, stream)
    return t


def tensor(obj, device=None, dtype=None):
    """A copy of a C-contiguous bytes-like object (a NumPy array, array.array,
    bytes) in new device memory, with its shape and dtype (or `dtype`)."""
    mv = memoryview(obj)
    fmt = _FORMATS.get(mv.format.lstrip("@=<"))
    if dtype is None and fmt is None:
        raise ValueError(f"xdev.tensor: buffer format '{mv.format}' has no xdev dtype; "
                         "pass dtype=")
    dtype = dtype_name(dtype or fmt)
    shape = mv.shape if dtype == fmt else (mv.nbytes // _ITEMSIZE[dtype],)
    t = empty(shape, dtype, device)
    return t.copy_from(obj)


# ------------------------------------------------------------------ DLPack consumer


def _xdev_device_for(dl_type, dl_id):
    """The xdev device whose stream a producer on DLPack device (type, id) must order before."""
    t = _XDEV_TYPE.get(dl_type)
    if t is None:
        raise BufferError(f"xdev.from_dlpack: DLPack device type {dl_type} is not one xdev "
                          "runs (CPU, CUDA, ROCm)")
    if t == CPU:
        return Device(CPU, 0)
    for i in range(device_count(t)):  # XDEV_VISIBLE_DEVICES may renumber: find the ordinal
        if get_device_properties(Device(t, i)).physical_index == dl_id:
            return Device(t, i)
    return Device(t, dl_id)  # the import names the problem


def from_dlpack(obj, *, stream=None, contiguous=False, writable=False):
    """Take any DLPack producer's tensor (NumPy >= 1.22, torch, CuPy, JAX, an
    xdev Tensor; or a bare DLPack capsule) without a copy. `stream` (an
    xdev.Stream; default: the current stream of the tensor's device) is where
    xdev will use it: the producer orders its own work before it.
    contiguous / writable: refuse a tensor that is not (XdevError)."""
    if isinstance(obj, Tensor):
        return obj
    source = None
    if is_capsule(obj):
        cap = obj
    else:
        if not hasattr(obj, "__dlpack__"):
            raise TypeError(f"xdev.from_dlpack: {type(obj).__name__} has no __dlpack__")
        dl_type, dl_id = obj.__dlpack_device__()
        dl_type = int(dl_type)
        dev = _xdev_device_for(dl_type, int(dl_id))
        dl_stream = None
        if dev.type != CPU:
            s = stream if stream is not None else current_stream(dev)
            native = s.native_handle
            dl_stream = native if native else (1 if dev.type == CUDA else 0)
        try:
            cap = obj.__dlpack__(stream=dl_stream, max_version=(1, 1))
        except TypeError:  # a producer before DLPack 1.0 (NumPy < 2.1) has no max_version
            cap = obj.__dlpack__(stream=dl_stream)
        source = obj
    ptr, versioned = open_capsule(cap)
    view = View()
    require = (CONTIGUOUS if contiguous else 0) | (WRITABLE if writable else 0)
    fn = "xdev_dlpack_import" if versioned else "xdev_dlpack_import_unversioned"
    st = getattr(lib, fn)(C.c_void_p(ptr), require, _stream_handle(stream), C.byref(view))
    if st != 0:
        raise fail(st, fn)
    mark_used(cap, versioned)
    n = view.ndim
    shape = tuple(view.shape[i] for i in range(n))
    strides = tuple(view.strides[i] for i in range(n))
    t = Tensor(view.data or 0, shape, _BY_CODE[view.dtype], Device(view.device), strides,
               owner=_Registration(view.base), read_only=bool(view.read_only), source=source)
    t.stream = stream
    return t
