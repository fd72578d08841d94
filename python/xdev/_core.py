# SPDX-License-Identifier: Apache-2.0
"""xdev._core - devices, streams, events and device memory (Memory), and the
Tensor that describes elements in device memory, xdev's own or another
library's taken through DLPack (xdev._interop)."""
import ctypes as C
from collections import namedtuple

from ._lib import NOT_READY, Dev, Props, PtrInfo, call, check, lib
from ._dlpack import HostBuffer

CPU, CUDA, HIP = 0, 1, 2  # xdev_device_type_t of the backends xdev ships

# ------------------------------------------------------------------ devices


def _type_of(spec):
    """A device type (int) from None (the default type), a name, an int or a Device."""
    if spec is None:
        t = C.c_int()
        call("xdev_default_device_type", C.byref(t))
        return t.value
    if isinstance(spec, Device):
        return spec.type
    if isinstance(spec, int):
        return spec
    if isinstance(spec, str):
        t = C.c_int()
        call("xdev_device_type_find", spec.split(":")[0].encode(), C.byref(t))
        return t.value
    raise TypeError(f"xdev: a device type is a name ('cuda'), an int or a Device, not "
                    f"{type(spec).__name__}")


class Device:
    """A device: Device("cuda:1"), Device("cpu"), Device("cuda", 0), Device(other).
    Index -1 (a bare type name) is the current device of that type."""
    __slots__ = ("type", "index")

    def __init__(self, spec, index=None):
        if isinstance(spec, Device):
            t, i = spec.type, spec.index
        elif isinstance(spec, str):
            d = Dev()
            name = spec if index is None else f"{spec}:{index}"
            call("xdev_device_parse", name.encode(), C.byref(d))
            t, i = d.type, d.index
        elif isinstance(spec, Dev):
            t, i = spec.type, spec.index
        elif isinstance(spec, int):
            t, i = spec, -1
        else:
            raise TypeError(f"xdev.Device: '{spec!r}' is not a device name ('cuda:0'), type or "
                            "Device")
        if index is not None and not isinstance(spec, str):
            i = index
        self.type, self.index = t, i

    @property
    def type_name(self):
        n = lib.xdev_device_type_name(self.type)
        return n.decode() if n else f"type{self.type}"

    def __str__(self):
        return self.type_name if self.index < 0 else f"{self.type_name}:{self.index}"

    def __repr__(self):
        return f"xdev.Device('{self}')"

    def __eq__(self, other):
        return isinstance(other, Device) and (self.type, self.index) == (other.type, other.index)

    def __hash__(self):
        return hash((self.type, self.index))

    def resolved(self):
        """The same device with index -1 replaced by the current one (checked)."""
        out = Dev()
        call("xdev_device_resolve", self._c(), C.byref(out))
        return Device(out)

    def _c(self):
        return Dev(self.type, self.index)


def _dev(spec):
    """A Device from None (the current device of the default type), a name or a Device."""
    if spec is None:
        return Device(_type_of(None), -1)
    return spec if isinstance(spec, Device) else Device(spec)


def version():
    return lib.xdev_version_string().decode()


def default_device_type():
    """The name of the type the selected backend provides (XDEV_BACKEND)."""
    return Device(_type_of(None)).type_name


def device_count(type=None):
    """Visible devices of a type (default: the default type); 0 where none or no backend."""
    n = C.c_int()
    call("xdev_device_count", _type_of(type), C.byref(n))
    return n.value


def is_available(type=None):
    return bool(lib.xdev_is_available(_type_of(type)))


def current_device(type=None):
    """This thread's current device of a type (default: the default type)."""
    t = _type_of(type)
    i = C.c_int()
    call("xdev_get_device_index", t, C.byref(i))
    return Device(t, i.value)


def set_device(device):
    call("xdev_set_device", _dev(device)._c())


DeviceProperties = namedtuple("DeviceProperties", "name capability total_memory "
                              "multiprocessor_count physical_index integrated")


def get_device_properties(device=None):
    p = Props()
    call("xdev_get_device_properties", _dev(device)._c(), C.byref(p))
    return DeviceProperties(p.name.decode("utf-8", "replace"),
                            (p.capability_major, p.capability_minor), p.total_memory,
                            p.multiprocessor_count, p.physical_index, bool(p.integrated))


def mem_get_info(device=None):
    """(free, total) bytes of a device."""
    free, total = C.c_size_t(), C.c_size_t()
    call("xdev_mem_get_info", _dev(device)._c(), C.byref(free), C.byref(total))
    return free.value, total.value


def synchronize(device=None):
    """Wait for one device's streams, or (None) every device of every loaded backend."""
    if device is None:
        call("xdev_synchronize")
    else:
        call("xdev_device_synchronize", _dev(device)._c())


# ------------------------------------------------------------------ streams and events


class Stream:
    """An xdev stream. Stream(device, priority) creates one (destroyed by
    close() or when collected); current_stream / default_stream / wrap_native
    give handles xdev or another library owns. `with stream:` makes it current
    (and its device) for the block, as torch.cuda.stream does."""

    def __init__(self, device=None, priority=0, *, _handle=None, _owned=True):
        if _handle is None:
            h = C.c_void_p()
            call("xdev_stream_create", _dev(device)._c(), int(priority), C.byref(h))
            _handle = h.value
        self.handle, self._owned, self._saved = _handle, _owned, []

    @classmethod
    def wrap_native(cls, device, native):
        """A handle for a native stream (cudaStream_t as an int) the caller keeps owning."""
        h = C.c_void_p()
        call("xdev_stream_wrap_native", _dev(device)._c(), C.c_void_p(native), C.byref(h))
        return cls(_handle=h.value, _owned=True)

    @property
    def device(self):
        d = Dev()
        call("xdev_stream_get_device", self.handle, C.byref(d))
        return Device(d)

    @property
    def priority(self):
        p = C.c_int()
        call("xdev_stream_get_priority", self.handle, C.byref(p))
        return p.value

    @property
    def native_handle(self):
        """The native stream (cudaStream_t, hipStream_t, the CPU queue) as an int, 0 for NULL."""
        n = C.c_void_p()
        call("xdev_stream_native_handle", self.handle, C.byref(n))
        return n.value or 0

    @property
    def name(self):
        buf = C.create_string_buffer(64)
        call("xdev_stream_get_name", self.handle, buf, 64)
        return buf.value.decode()

    @name.setter
    def name(self, value):
        call("xdev_stream_set_name", self.handle, value.encode() if value else None)

    def query(self):
        """True when all work queued so far has finished."""
        st = lib.xdev_stream_query(self.handle)
        if st == NOT_READY:
            return False
        check(st, "xdev_stream_query")
        return True

    def synchronize(self):
        call("xdev_stream_synchronize", self.handle)

    def wait_event(self, event):
        call("xdev_stream_wait_event", self.handle, event.handle)

    def wait_stream(self, other):
        call("xdev_stream_wait_stream", self.handle, other.handle)

    def record_event(self, event=None):
        event = event or Event()
        event.record(self)
        return event

    def __enter__(self):
        dev = self.device
        self._saved.append((current_device(dev.type), current_stream(dev)))
        call("xdev_stream_set_current", self.handle)
        return self

    def __exit__(self, *exc):
        prev_dev, prev_stream = self._saved.pop()
        call("xdev_stream_set_current", prev_stream.handle)
        set_device(prev_dev)

    def close(self):
        """Destroy the stream (after its queued work) if this object created it."""
        if self._owned and self.handle:
            h, self.handle = self.handle, None
            call("xdev_stream_destroy", h)

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass

    def __eq__(self, other):
        return isinstance(other, Stream) and self.handle == other.handle

    def __hash__(self):
        return hash(self.handle)

    def __repr__(self):
        return f"<xdev.Stream {self.handle:#x} on {self.device}>"


def current_stream(device=None):
    h = C.c_void_p()
    call("xdev_stream_current", _dev(device)._c(), C.byref(h))
    return Stream(_handle=h.value, _owned=False)


def default_stream(device=None):
    h = C.c_void_p()
    call("xdev_stream_default", _dev(device)._c(), C.byref(h))
    return Stream(_handle=h.value, _owned=False)


def _stream_handle(stream):
    """The C handle of a Stream or None (NULL: the current stream of the operands' device)."""
    if stream is None:
        return None
    if isinstance(stream, Stream):
        return stream.handle
    raise TypeError(f"xdev: a stream is an xdev.Stream or None, not {type(stream).__name__}")


class Event:
    """torch.cuda.Event: created without a device, bound to one at the first record."""

    def __init__(self, enable_timing=False, blocking=False, interprocess=False):
        flags = (1 if enable_timing else 0) | (2 if blocking else 0) | (4 if interprocess else 0)
        h = C.c_void_p()
        call("xdev_event_create", flags, C.byref(h))
        self.handle = h.value

    def record(self, stream=None):
        call("xdev_event_record", self.handle, _stream_handle(stream))
        return self

    def query(self):
        st = lib.xdev_event_query(self.handle)
        if st == NOT_READY:
            return False
        check(st, "xdev_event_query")
        return True

    def synchronize(self):
        call("xdev_event_synchronize", self.handle)

    def elapsed_time(self, end):
        """Milliseconds from this event to `end` (both recorded with enable_timing)."""
        ms = C.c_float()
        call("xdev_event_elapsed_time", self.handle, end.handle, C.byref(ms))
        return ms.value

    @property
    def device(self):
        d = Dev()
        call("xdev_event_get_device", self.handle, C.byref(d))
        return Device(d)

    def close(self):
        if self.handle:
            h, self.handle = self.handle, None
            call("xdev_event_destroy", h)

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass


# ------------------------------------------------------------------ memory


def pointer_info(ptr):
    """What xdev knows of an address: (kind, device, base, size); kind 'host'
    (not xdev's), 'device' or 'pinned'."""
    info = PtrInfo()
    call("xdev_pointer_get_info", C.c_void_p(ptr), C.byref(info))
    kind = {0: "host", 1: "device", 2: "pinned"}.get(info.kind, str(info.kind))
    return kind, (Device(info.device) if info.kind else None), info.base or 0, info.size


class Memory:
    """An allocation of `size` bytes on a device (xdev_malloc_device), freed by
    free() / the with-block's end / when collected. Copies to and from any
    C-contiguous bytes-like object (bytes, bytearray, NumPy arrays) through
    the buffer protocol, blocking until done (xdev_memcpy's rule: after the
    work on the device's current stream)."""

    def __init__(self, size, device=None):
        size = int(size)
        if size < 0:
            raise ValueError(f"xdev.Memory: size {size} is negative")
        self.device = _dev(device).resolved()
        p = C.c_void_p()
        call("xdev_malloc_device", self.device._c(), C.byref(p), size)
        self.ptr, self.size = p.value or 0, size

    def _range(self, offset, n, what):
        if self.ptr == 0 and self.size:
            raise ValueError(f"xdev.Memory.{what}: the memory was freed")
        if offset < 0 or n < 0 or offset + n > self.size:
            raise ValueError(f"xdev.Memory.{what}: {n} bytes at offset {offset} run past the "
                             f"end of the allocation ({self.size} bytes)")

    def copy_from(self, src, offset=0):
        """Copy a bytes-like object (or another Memory, whole) into this memory at offset."""
        if isinstance(src, Memory):
            self._range(offset, src.size, "copy_from")
            call("xdev_memcpy", C.c_void_p(self.ptr + offset), C.c_void_p(src.ptr), src.size)
            return self
        with HostBuffer(src, writable=False) as (addr, n):
            self._range(offset, n, "copy_from")
            if n:
                call("xdev_memcpy", C.c_void_p(self.ptr + offset), C.c_void_p(addr), n)
        return self

    def copy_to(self, dst, offset=0):
        """Copy into a writable bytes-like object (bytearray, NumPy array) as many
        bytes as it holds, from this memory at offset; returns dst."""
        with HostBuffer(dst, writable=True) as (addr, n):
            self._range(offset, n, "copy_to")
            if n:
                call("xdev_memcpy", C.c_void_p(addr), C.c_void_p(self.ptr + offset), n)
        return dst

    def to_bytes(self):
        return bytes(self.copy_to(bytearray(self.size)))

    def fill_bytes(self, value, stream=None):
        """Set every byte to `value` (0-255), queued on `stream` (xdev_memset_async)."""
        if self.size:
            call("xdev_memset_async", C.c_void_p(self.ptr), int(value), self.size,
                 _stream_handle(stream))
        return self

    def as_tensor(self, shape, dtype="uint8"):
        """A Tensor of `shape` and `dtype` over this memory (compact, row-major)."""
        from ._interop import Tensor
        return Tensor._over(self, shape, dtype)

    def free(self):
        """Give the memory back (stream-ordered); later use raises."""
        if self.ptr:
            p, self.ptr = self.ptr, 0
            call("xdev_free", C.c_void_p(p))

    close = free

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.free()

    def __del__(self):
        try:
            self.free()
        except Exception:
            pass

    def __int__(self):
        return self.ptr

    def __len__(self):
        return self.size

    def __repr__(self):
        return f"<xdev.Memory {self.size} bytes at {self.ptr:#x} on {self.device}>"


