# SPDX-License-Identifier: Apache-2.0
"""xdev._dlpack - DLPack capsules from pure Python (ctypes on the CPython C API).

A producer's capsule ("dltensor" / "dltensor_versioned") carries a destructor
that calls the tensor's deleter while the capsule is still unused, so an
export nobody takes is given back when the capsule is dropped; a consumer
renames the capsule "used_..." once it has taken the tensor, which turns
that destructor into a no-op. Also the buffer protocol (PyObject_GetBuffer)
for copies to and from any bytes-like object without an extra copy."""
import ctypes as C

_api = C.pythonapi
_new = C.PYFUNCTYPE(C.py_object, C.c_void_p, C.c_char_p, C.c_void_p)(("PyCapsule_New", _api))
_is_valid = C.PYFUNCTYPE(C.c_int, C.py_object, C.c_char_p)(("PyCapsule_IsValid", _api))
_get = C.PYFUNCTYPE(C.c_void_p, C.py_object, C.c_char_p)(("PyCapsule_GetPointer", _api))
_set_name = C.PYFUNCTYPE(C.c_int, C.py_object, C.c_char_p)(("PyCapsule_SetName", _api))
# the destructor's own view of the capsule: a bare PyObject *, never a new reference
_raw_valid = C.PYFUNCTYPE(C.c_int, C.c_void_p, C.c_char_p)(("PyCapsule_IsValid", _api))
_raw_get = C.PYFUNCTYPE(C.c_void_p, C.c_void_p, C.c_char_p)(("PyCapsule_GetPointer", _api))

VERSIONED, UNVERSIONED = b"dltensor_versioned", b"dltensor"
# The names must outlive the capsules: a capsule keeps the pointer, not a copy.
_USED = {VERSIONED: b"used_dltensor_versioned", UNVERSIONED: b"used_dltensor"}
_DELETER = C.CFUNCTYPE(None, C.c_void_p)
# where `deleter` sits: DLManagedTensorVersioned {version (8), manager_ctx, deleter, ...};
# DLManagedTensor {DLTensor (48 bytes), manager_ctx, deleter}
_DELETER_AT = {VERSIONED: 16, UNVERSIONED: 56}
# where the DLTensor's DLDevice sits: after version, manager_ctx, deleter, flags; or first
_DLTENSOR_AT = {VERSIONED: 32, UNVERSIONED: 0}


@C.CFUNCTYPE(None, C.c_void_p)
def _destroy(capsule):
    for name, at in _DELETER_AT.items():
        if _raw_valid(capsule, name):  # still unused: the tensor is still the producer's
            managed = _raw_get(capsule, name)
            fn = C.c_void_p.from_address(managed + at).value
            if fn:
                _DELETER(fn)(managed)
            return


def new_capsule(managed, versioned):
    """A producer's capsule around a DLManagedTensor(Versioned) pointer."""
    return _new(managed, VERSIONED if versioned else UNVERSIONED, C.cast(_destroy, C.c_void_p))


def is_capsule(obj):
    return type(obj).__name__ == "PyCapsule"


def open_capsule(capsule):
    """(pointer, versioned) of an unused DLPack capsule; ValueError otherwise."""
    for name in (VERSIONED, UNVERSIONED):
        if _is_valid(capsule, name):
            return _get(capsule, name), name == VERSIONED
    raise ValueError("xdev.from_dlpack: the capsule is not an unused DLPack tensor (named "
                     "'dltensor' or 'dltensor_versioned'): it was consumed already, or is not "
                     "DLPack's")


def mark_used(capsule, versioned):
    _set_name(capsule, _USED[VERSIONED if versioned else UNVERSIONED])


def dl_device(managed, versioned):
    """(device_type, device_id) written in a DLManagedTensor(Versioned)."""
    at = managed + _DLTENSOR_AT[VERSIONED if versioned else UNVERSIONED] + 8  # after data
    return C.c_int.from_address(at).value, C.c_int32.from_address(at + 4).value


# ------------------------------------------------------------------ buffer protocol


class _PyBuffer(C.Structure):  # Py_buffer
    _fields_ = [("buf", C.c_void_p), ("obj", C.c_void_p), ("len", C.c_ssize_t),
                ("itemsize", C.c_ssize_t), ("readonly", C.c_int), ("ndim", C.c_int),
                ("format", C.c_char_p), ("shape", C.c_void_p), ("strides", C.c_void_p),
                ("suboffsets", C.c_void_p), ("internal", C.c_void_p)]


_get_buffer = C.PYFUNCTYPE(C.c_int, C.py_object, C.POINTER(_PyBuffer), C.c_int)(
    ("PyObject_GetBuffer", _api))
_release_buffer = C.PYFUNCTYPE(None, C.POINTER(_PyBuffer))(("PyBuffer_Release", _api))
_PYBUF_WRITABLE, _PYBUF_C_CONTIGUOUS = 0x1, 0x38


class HostBuffer:
    """`with HostBuffer(obj, writable) as (address, nbytes):` the memory of a
    C-contiguous bytes-like object (bytes, bytearray, memoryview, array,
    NumPy), held (no copy) until the block ends."""

    def __init__(self, obj, writable):
        self.obj, self.view = obj, _PyBuffer()
        flags = _PYBUF_C_CONTIGUOUS | (_PYBUF_WRITABLE if writable else 0)
        try:
            _get_buffer(obj, C.byref(self.view), flags)
        except (BufferError, TypeError) as e:
            what = "a writable" if writable else "a"
            raise TypeError(f"xdev: {type(obj).__name__} is not {what} C-contiguous bytes-like "
                            f"object ({e})") from None

    def __enter__(self):
        return self.view.buf or 0, self.view.len

    def __exit__(self, *exc):
        _release_buffer(C.byref(self.view))
