# SPDX-License-Identifier: Apache-2.0
"""tests/dlpack_capsule.py - DLPack capsules from Python through ctypes, for
the interop tests (interop_numpy.py, gpu/interop_torch.py): xdev has no
Python package.

A producer's capsule carries a destructor that calls the tensor's deleter
while the capsule is still unused ("dltensor" / "dltensor_versioned"), so a
consumer that fails or never takes it does not leak the export; a consumer
renames the capsule "used_..." once it has taken it."""
import ctypes as C

_api = C.pythonapi
_new = C.PYFUNCTYPE(C.py_object, C.c_void_p, C.c_char_p, C.c_void_p)(("PyCapsule_New", _api))
_get = C.PYFUNCTYPE(C.c_void_p, C.py_object, C.c_char_p)(("PyCapsule_GetPointer", _api))
_set_name = C.PYFUNCTYPE(C.c_int, C.py_object, C.c_char_p)(("PyCapsule_SetName", _api))
# the destructor's own view of the capsule: a bare PyObject *, never a new reference
_raw_valid = C.PYFUNCTYPE(C.c_int, C.c_void_p, C.c_char_p)(("PyCapsule_IsValid", _api))
_raw_get = C.PYFUNCTYPE(C.c_void_p, C.c_void_p, C.c_char_p)(("PyCapsule_GetPointer", _api))

_DELETER = C.CFUNCTYPE(None, C.c_void_p)
# where `deleter` sits: DLManagedTensorVersioned {version, manager_ctx, deleter, ...};
# DLManagedTensor {DLTensor (48 bytes), manager_ctx, deleter}
_DELETER_AT = {b"dltensor_versioned": 16, b"dltensor": 56}


def name(versioned):
    return b"dltensor_versioned" if versioned else b"dltensor"


@C.CFUNCTYPE(None, C.c_void_p)
def _destroy(capsule):
    for n, at in _DELETER_AT.items():
        if _raw_valid(capsule, n):  # still unused: the tensor is still the producer's
            managed = _raw_get(capsule, n)
            fn = C.c_void_p.from_address(managed + at).value
            if fn:
                _DELETER(fn)(managed)
            return


def new(managed, versioned):
    """A producer's capsule around a DLManagedTensor(Versioned) pointer."""
    return _new(managed, name(versioned), C.cast(_destroy, C.c_void_p))


def pointer(capsule, versioned):
    return _get(capsule, name(versioned))


# The names must outlive the capsules: a capsule keeps the pointer, not a copy.
_USED = {True: b"used_dltensor_versioned", False: b"used_dltensor"}


def mark_used(capsule, versioned):
    _set_name(capsule, _USED[versioned])
