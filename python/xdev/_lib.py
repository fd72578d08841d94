# SPDX-License-Identifier: Apache-2.0
"""xdev._lib - finds libxdev and declares, with ctypes, every C call the
package makes, with the structs they pass (the layouts of include/xdev/*.h).

Where libxdev is looked for (the first that exists wins; library_path() says
which was taken):
1. the XDEV_LIBRARY environment variable: the library file itself
   (/opt/xdev/lib/libxdev.so.0); read here only, never by libxdev;
2. next to the package: `cmake --install` writes _install.py with the library
   directory relative to the package, so a moved prefix still works; a
   libxdev.so* inside the package directory is taken too;
3. the loader: libxdev.so.<major> by name (LD_LIBRARY_PATH, ldconfig).
A failure names every place tried, so a user sees why it was not found."""
import ctypes as C
import os

SONAMES = ("libxdev.so.0", "libxdev.so")


class XdevError(RuntimeError):
    """An xdev call failed: `status` is its xdev_status_t (an int),
    `status_name` its constant ("XDEV_ERROR_INVALID_VALUE"), `message` the
    library's message (xdev_last_error), `call` the C function."""

    def __init__(self, status, status_name, message, call):
        self.status, self.status_name, self.message, self.call = status, status_name, message, call
        # xdev's messages mostly start with the call's name already
        where = "" if message.startswith(call) else f"{call}: "
        super().__init__(f"{where}{message} [{status_name}]")


class LibraryNotFound(ImportError):
    """libxdev was found nowhere; the message lists where it was looked for."""


def _candidates():
    here = os.path.dirname(os.path.abspath(__file__))
    env = os.environ.get("XDEV_LIBRARY")
    if env:
        # an explicit choice: only this one, so a wrong path is an error, not a fallback
        return [("XDEV_LIBRARY", env)], True
    out = []
    try:
        from . import _install  # written by cmake --install
        libdir = os.path.normpath(os.path.join(here, _install.LIBDIR_FROM_PACKAGE))
        out += [("installed beside the package", os.path.join(libdir, n)) for n in SONAMES]
    except ImportError:
        pass
    out += [("inside the package", os.path.join(here, n)) for n in SONAMES]
    out += [("the loader", n) for n in SONAMES]
    return out, False


def _loaded_path(dll, name):
    """The file the loader opened for `name` (dlinfo's link map), else the name."""
    try:
        dlinfo = C.CDLL(None).dlinfo
        lm = C.c_void_p()
        if dlinfo(C.c_void_p(dll._handle), 2, C.byref(lm)) == 0 and lm.value:  # RTLD_DI_LINKMAP
            path = C.c_char_p.from_address(lm.value + C.sizeof(C.c_void_p)).value  # l_name
            if path:
                return os.fsdecode(path)
    except (AttributeError, OSError):
        pass
    return name


def _load():
    tried = []
    cands, explicit = _candidates()
    for how, path in cands:
        if os.sep in path and not os.path.exists(path):
            tried.append(f"{path} ({how}: no such file)")
            continue
        try:
            # global, as for a program linked with it: what libxdev later loads
            # (plugins, kernels compiled at run time) sees its symbols
            dll = C.CDLL(path, mode=C.RTLD_GLOBAL)
            return dll, _loaded_path(dll, path), how
        except OSError as e:
            tried.append(f"{path} ({how}: {e})")
    hint = ("XDEV_LIBRARY names a file that does not load" if explicit else
            "set XDEV_LIBRARY=/path/to/libxdev.so.0, or install xdev with cmake --install "
            "(the package then finds the library beside it), or add its directory to "
            "LD_LIBRARY_PATH")
    raise LibraryNotFound("xdev: libxdev not found; tried " + "; ".join(tried) + ". " + hint)


lib, LIBRARY_PATH, LIBRARY_FOUND_BY = _load()
libc = C.CDLL(None)
libc.free.argtypes = [C.c_void_p]
libc.free.restype = None

# ------------------------------------------------------------------ structs


class Dev(C.Structure):  # xdev_device_t
    _fields_ = [("type", C.c_int), ("index", C.c_int)]


class Props(C.Structure):  # xdev_device_properties_t
    _fields_ = [("name", C.c_char * 256), ("capability_major", C.c_int),
                ("capability_minor", C.c_int), ("total_memory", C.c_size_t),
                ("multiprocessor_count", C.c_int), ("physical_index", C.c_int),
                ("integrated", C.c_bool)]


class PtrInfo(C.Structure):  # xdev_pointer_info_t
    _fields_ = [("kind", C.c_int), ("device", Dev), ("base", C.c_void_p), ("size", C.c_size_t),
                ("block_size", C.c_size_t)]


class View(C.Structure):  # xdev_tensor_view_t
    _fields_ = [("data", C.c_void_p), ("base", C.c_void_p), ("bytes", C.c_size_t),
                ("device", Dev), ("kind", C.c_int), ("dtype", C.c_int), ("ndim", C.c_int32),
                ("shape", C.POINTER(C.c_int64)), ("strides", C.POINTER(C.c_int64)),
                ("contiguous", C.c_bool), ("read_only", C.c_bool)]


class CompileOptions(C.Structure):  # xdev_compile_options_t
    _fields_ = [("size", C.c_size_t), ("name", C.c_char_p),
                ("options", C.POINTER(C.c_char_p)), ("noptions", C.c_int)]


MAX_PARAMS = 24  # XDEV_KERNEL_MAX_PARAMS


class KernelAttrs(C.Structure):  # xdev_kernel_attributes_t
    _fields_ = [("name", C.c_char_p), ("device", Dev), ("nparams", C.c_int),
                ("max_threads_per_block", C.c_int), ("static_shared_bytes", C.c_size_t),
                ("uses_barrier", C.c_int), ("param_sizes", C.c_uint32 * MAX_PARAMS),
                ("param_kinds", C.c_uint8 * MAX_PARAMS), ("cpu_form", C.c_int)]


class Dim3(C.Structure):  # xdev_dim3_t
    _fields_ = [("x", C.c_uint), ("y", C.c_uint), ("z", C.c_uint)]


class LaunchConfig(C.Structure):  # xdev_launch_config_t
    _fields_ = [("grid", Dim3), ("block", Dim3), ("shared_bytes", C.c_size_t),
                ("stream", C.c_void_p)]


class Arg(C.Structure):  # xdev_arg_t
    _fields_ = [("value", C.c_void_p), ("size", C.c_size_t)]


# ------------------------------------------------------------------ signatures
_S, _P, _Z = C.c_int, C.c_void_p, C.c_size_t
_PP, _PZ, _PI, _PD = C.POINTER(C.c_void_p), C.POINTER(C.c_size_t), C.POINTER(C.c_int), C.POINTER(Dev)
_I64P = C.POINTER(C.c_int64)
_SIGNATURES = {
    # error.h, runtime.h, dtype.h
    "xdev_status_string": (C.c_char_p, [_S]),
    "xdev_last_error": (C.c_char_p, []),
    "xdev_clear_error": (None, []),
    "xdev_version_string": (C.c_char_p, []),
    "xdev_dtype_size": (_Z, [C.c_int]),
    # device.h
    "xdev_device_type_name": (C.c_char_p, [C.c_int]),
    "xdev_device_type_find": (_S, [C.c_char_p, _PI]),
    "xdev_device_parse": (_S, [C.c_char_p, _PD]),
    "xdev_default_device_type": (_S, [_PI]),
    "xdev_device_count": (_S, [C.c_int, _PI]),
    "xdev_is_available": (C.c_bool, [C.c_int]),
    "xdev_get_device_index": (_S, [C.c_int, _PI]),
    "xdev_set_device": (_S, [Dev]),
    "xdev_device_resolve": (_S, [Dev, _PD]),
    "xdev_get_device_properties": (_S, [Dev, C.POINTER(Props)]),
    "xdev_device_synchronize": (_S, [Dev]),
    "xdev_synchronize": (_S, []),
    # stream.h, event.h
    "xdev_stream_create": (_S, [Dev, C.c_int, _PP]),
    "xdev_stream_destroy": (_S, [_P]),
    "xdev_stream_wrap_native": (_S, [Dev, _P, _PP]),
    "xdev_stream_native_handle": (_S, [_P, _PP]),
    "xdev_stream_set_name": (_S, [_P, C.c_char_p]),
    "xdev_stream_get_name": (_S, [_P, C.c_char_p, _Z]),
    "xdev_stream_default": (_S, [Dev, _PP]),
    "xdev_stream_current": (_S, [Dev, _PP]),
    "xdev_stream_set_current": (_S, [_P]),
    "xdev_stream_get_device": (_S, [_P, _PD]),
    "xdev_stream_get_priority": (_S, [_P, _PI]),
    "xdev_stream_query": (_S, [_P]),
    "xdev_stream_synchronize": (_S, [_P]),
    "xdev_stream_wait_event": (_S, [_P, _P]),
    "xdev_stream_wait_stream": (_S, [_P, _P]),
    "xdev_event_create": (_S, [C.c_uint, _PP]),
    "xdev_event_destroy": (_S, [_P]),
    "xdev_event_record": (_S, [_P, _P]),
    "xdev_event_query": (_S, [_P]),
    "xdev_event_synchronize": (_S, [_P]),
    "xdev_event_elapsed_time": (_S, [_P, _P, C.POINTER(C.c_float)]),
    "xdev_event_get_device": (_S, [_P, _PD]),
    # memory.h, interop.h
    "xdev_malloc_device": (_S, [Dev, _PP, _Z]),
    "xdev_free": (_S, [_P]),
    "xdev_memcpy": (_S, [_P, _P, _Z]),
    "xdev_memcpy_async": (_S, [_P, _P, _Z, _P]),
    "xdev_memset_async": (_S, [_P, C.c_int, _Z, _P]),
    "xdev_mem_get_info": (_S, [Dev, _PZ, _PZ]),
    "xdev_pointer_get_info": (_S, [_P, C.POINTER(PtrInfo)]),
    "xdev_memory_unregister": (_S, [_P]),
    "xdev_dlpack_import": (_S, [_P, C.c_uint32, _P, C.POINTER(View)]),
    "xdev_dlpack_import_unversioned": (_S, [_P, C.c_uint32, _P, C.POINTER(View)]),
    "xdev_dlpack_export": (_S, [_P, C.c_int32, _I64P, _I64P, C.c_int, C.c_uint64, _P, _P, _PP]),
    "xdev_dlpack_export_unversioned": (_S, [_P, C.c_int32, _I64P, _I64P, C.c_int, _P, _P, _PP]),
    # kernel.h
    "xdev_module_compile": (_S, [Dev, C.c_char_p, C.POINTER(CompileOptions), _PP]),
    "xdev_compile_log": (C.c_char_p, []),
    "xdev_module_unload": (_S, [_P]),
    "xdev_module_get_kernel": (_S, [_P, C.c_char_p, _PP]),
    "xdev_kernel_get_attributes": (_S, [_P, C.POINTER(KernelAttrs)]),
    "xdev_launch_kernel": (_S, [_P, C.POINTER(LaunchConfig), C.POINTER(Arg), C.c_int]),
    "xdev_elementwise": (_S, [C.c_char_p, C.c_int, C.c_int, _PP, _P, _Z, _P]),
    # memviz.h
    "xdev_memory_snapshot": (_S, [_PP]),
    "xdev_memory_snapshot_write": (_S, [C.c_char_p]),
    "xdev_memory_viz_html": (_S, [C.c_char_p, _Z, _PP, _PZ]),
    "xdev_memory_viz_write": (_S, [C.c_char_p]),
    # rng.h
    "xdev_manual_seed": (_S, [C.c_uint64]),
    "xdev_manual_seed_all": (_S, [C.c_uint64]),
    "xdev_seed": (_S, []),
    "xdev_seed_all": (_S, []),
    "xdev_initial_seed": (_S, [Dev, C.POINTER(C.c_uint64)]),
    "xdev_get_rng_state": (_S, [Dev, _P, _Z]),
    "xdev_set_rng_state": (_S, [Dev, _P, _Z]),
    "xdev_rng_uniform": (_S, [_P, C.c_int, _P, _Z, _P]),
    "xdev_rng_normal": (_S, [_P, C.c_int, _P, _Z, C.c_double, C.c_double, _P]),
}
for _name, (_res, _args) in _SIGNATURES.items():
    _fn = getattr(lib, _name)
    _fn.restype, _fn.argtypes = _res, _args

NOT_READY = 6  # XDEV_ERROR_NOT_READY: an answer from the queries, not a failure


def fail(status, call):
    """The XdevError for a failed call, with the thread's message (then cleared,
    so that the sticky error state does not leak into the next failure)."""
    msg = (lib.xdev_last_error() or b"").decode("utf-8", "replace")
    name = lib.xdev_status_string(status).decode()
    lib.xdev_clear_error()
    return XdevError(status, name, msg, call)


def check(status, call):
    if status != 0:
        raise fail(status, call)


def call(name, *args):
    """lib.<name>(*args), raising XdevError when it fails."""
    check(getattr(lib, name)(*args), name)


XdevError.__module__ = LibraryNotFound.__module__ = "xdev"  # as users name them
