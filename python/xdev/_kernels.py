# SPDX-License-Identifier: Apache-2.0
"""xdev._kernels - kernels written once in xdev's C dialect (xdev/kernel_lang.h),
compiled at run time for a device (xdev_module_compile: NVRTC, hiprtc, the
system C compiler; cached on disk) and launched on a stream; and
xdev_elementwise (one expression, generated and compiled once).

Launch arguments are marshalled from the kernel's own signature
(xdev_kernel_get_attributes): a pointer parameter takes an xdev.Tensor, an
xdev.Memory, an int address or None; a value parameter a Python number packed as the
parameter's C type declared in the source (XDEV_PARAM(float, a) takes 2 as
2.0f; an integer type refuses 2.5), else by its size (an int as an integer, a
float as float for 4 bytes, double for 8), or anything bytes-like of exactly
its size (numpy.float32(2), ctypes.c_short(3)). xdev checks count, sizes and
pointers at launch."""
import ctypes as C
import re
import struct

from ._core import Memory, _dev, _stream_handle
from ._interop import DTYPES, Tensor
from ._lib import Arg, CompileOptions, Dim3, KernelAttrs, LaunchConfig, call, lib

KPARAM_POINTER = 1  # XDEV_KPARAM_POINTER
_KERNEL_DECL = re.compile(r"\bXDEV_KERNEL(?:_SYNC|_BLOCK)?\s*\(")
_FLOAT_TYPES = re.compile(r"\b(float|double)\b")
_INT_TYPES = re.compile(r"\b(char|short|int|long|unsigned|signed|size_t|ptrdiff_t|bool|_Bool|"
                        r"u?int(8|16|32|64)_t)\b")


def _split_top(text):
    """text split at the commas outside parentheses."""
    out, depth, cur = [], 0, []
    for ch in text:
        if ch == "," and depth == 0:
            out.append("".join(cur).strip())
            cur = []
            continue
        depth += (ch == "(") - (ch == ")")
        cur.append(ch)
    out.append("".join(cur).strip())
    return out


def _parse_signatures(source):
    """{kernel: [(parameter type, name) or None per parameter]} from the
    XDEV_KERNEL declarations of dialect source: the C types the launch packs
    Python numbers for (a float parameter takes 2 as 2.0f). Comments and
    macros are not expanded: what cannot be read is None (size-based packing)."""
    text = re.sub(r"/\*.*?\*/|//[^\n]*", " ", source, flags=re.S)
    out = {}
    for m in _KERNEL_DECL.finditer(text):
        depth, i = 1, m.end()
        while i < len(text) and depth:
            depth += (text[i] == "(") - (text[i] == ")")
            i += 1
        parts = _split_top(text[m.end():i - 1])
        if not parts or not re.fullmatch(r"\w+", parts[0]):
            continue
        params = []
        for p in parts[1:]:
            v = re.fullmatch(r"XDEV_PARAM\s*\((.*),\s*(\w+)\s*\)", p, re.S)
            params.append((" ".join(v.group(1).split()), v.group(2)) if v else None)
        out[parts[0]] = params
    return out


def _address(x, what):
    if x is None:
        return 0
    if isinstance(x, Tensor):
        return x.data_ptr
    if isinstance(x, Memory):
        return x.ptr
    if isinstance(x, int):
        return x
    raise TypeError(f"xdev: {what} is a pointer: pass an xdev.Tensor, xdev.Memory, an address "
                    f"or None, not {type(x).__name__} (take a NumPy or torch array with "
                    "xdev.from_dlpack first)")


def _value_bytes(x, size, what, ctype=None):
    if isinstance(x, bool):
        x = int(x)
    if ctype is not None and isinstance(x, (int, float)):
        if _FLOAT_TYPES.search(ctype):
            x = float(x)  # a float parameter given 2 takes 2.0
        elif isinstance(x, float) and _INT_TYPES.search(ctype):
            raise TypeError(f"xdev: {what} is declared '{ctype}': pass an int, not {x!r}")
    if isinstance(x, int):
        size = size or 8
        if size not in (1, 2, 4, 8):
            raise TypeError(f"xdev: {what} takes {size} bytes: pass a bytes-like value")
        signed = x < 0
        try:
            return x.to_bytes(size, "little", signed=signed)
        except OverflowError:
            raise OverflowError(f"xdev: {what}: {x} does not fit in {size} bytes") from None
    if isinstance(x, float):
        code = {2: "<e", 4: "<f", 8: "<d", 0: "<d"}.get(size)
        if code is None:
            raise TypeError(f"xdev: {what} takes {size} bytes: a float cannot be packed into it")
        return struct.pack(code, x)
    try:
        return bytes(memoryview(x).cast("B"))
    except TypeError:
        raise TypeError(f"xdev: {what}: cannot pass a {type(x).__name__} by value (an int, a "
                        "float or a bytes-like value of the parameter's size)") from None


def _dim3(v, what):
    t = (v,) if isinstance(v, int) else tuple(v)
    if not 1 <= len(t) <= 3:
        raise ValueError(f"xdev: {what} has 1 to 3 dimensions, not {len(t)}")
    t = t + (1,) * (3 - len(t))
    if any(not isinstance(n, int) or n < 1 for n in t):
        raise ValueError(f"xdev: {what} sizes are integers >= 1: {v}")
    return Dim3(*t)


class Kernel:
    """A kernel of a Module: launch(grid, block, *args) or call it."""

    def __init__(self, module, handle, name, decls=None):
        self.module, self.handle, self.name = module, handle, name
        self.declared = decls or []  # [(C type, name) or None] from the source, when read
        a = KernelAttrs()
        call("xdev_kernel_get_attributes", handle, C.byref(a))
        self.nparams, self.max_threads_per_block = a.nparams, a.max_threads_per_block
        n = max(a.nparams, 0)
        self.param_sizes = tuple(a.param_sizes[:n])
        self.param_kinds = tuple(a.param_kinds[:n])

    def launch(self, grid, block, *args, shared_bytes=0, stream=None):
        """Enqueue the kernel on `stream` (None: the current stream of its device)."""
        keep, argv = [], (Arg * max(len(args), 1))()
        for i, x in enumerate(args):
            decl = self.declared[i] if i < len(self.declared) else None
            what = f"{self.name}: argument {i}" + (f" '{decl[1]}'" if decl else "")
            size = self.param_sizes[i] if i < len(self.param_sizes) else 0
            kind = self.param_kinds[i] if i < len(self.param_kinds) else None
            pointer = (kind & KPARAM_POINTER) if kind is not None else \
                isinstance(x, (Tensor, Memory)) or x is None
            if pointer:
                raw = C.c_void_p(_address(x, what))
                keep.append(raw)
                argv[i] = Arg(C.cast(C.byref(raw), C.c_void_p), C.sizeof(raw))
            else:
                data = _value_bytes(x, size, what, decl[0] if decl else None)
                b = C.create_string_buffer(data, max(len(data), 1))
                keep.append(b)
                argv[i] = Arg(C.cast(b, C.c_void_p), len(data))
        cfg = LaunchConfig(_dim3(grid, "grid"), _dim3(block, "block"), int(shared_bytes),
                           _stream_handle(stream))
        call("xdev_launch_kernel", self.handle, C.byref(cfg), argv, len(args))

    __call__ = launch

    def __repr__(self):
        return f"<xdev.Kernel {self.name} ({self.nparams} parameters)>"


class Module:
    """Compiled kernels for one device; kernels by name: m["saxpy"] or m.saxpy.
    unload() (or the with-block's end, or collection) waits for its launches."""

    def __init__(self, handle, device, signatures=None):
        self.handle, self.device, self._kernels = handle, device, {}
        self._signatures = signatures or {}

    def get_kernel(self, name):
        if name not in self._kernels:
            h = C.c_void_p()
            call("xdev_module_get_kernel", self.handle, name.encode(), C.byref(h))
            self._kernels[name] = Kernel(self, h.value, name, self._signatures.get(name))
        return self._kernels[name]

    __getitem__ = get_kernel

    def __getattr__(self, name):
        if name.startswith("_") or "handle" not in self.__dict__:
            raise AttributeError(name)
        return self.get_kernel(name)

    def unload(self):
        if self.handle:
            h, self.handle = self.handle, None
            self._kernels.clear()
            call("xdev_module_unload", h)

    close = unload

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.unload()

    def __del__(self):
        try:
            self.unload()
        except Exception:
            pass


def compile(source, device=None, *, options=(), name=None):
    """Compile kernel source in xdev's dialect for `device` (default: the
    current device of the default type) and load it. The compiler's refusal is
    XdevError XDEV_ERROR_COMPILE quoting its log (all of it: compile_log())."""
    dev = _dev(device).resolved()
    opts = [o.encode() for o in options]
    arr = (C.c_char_p * max(len(opts), 1))(*opts)
    o = CompileOptions(C.sizeof(CompileOptions), name.encode() if name else None, arr, len(opts))
    h = C.c_void_p()
    call("xdev_module_compile", dev._c(), source.encode(), C.byref(o), C.byref(h))
    return Module(h.value, dev, _parse_signatures(source))


def compile_log():
    """The compiler's whole output for this thread's last compile that ran it."""
    return (lib.xdev_compile_log() or b"").decode("utf-8", "replace")


def elementwise(expression, out, *inputs, dtype=None, count=None, stream=None):
    """out[i] = expression over in0, in1, ... (element i of each input) for
    every element of out, e.g. elementwise("in0 * 2.5f + in1", y, x, y).
    Operands are xdev Tensors (dtype and count taken from out) or Memory /
    addresses with dtype= and count=; float32, float64, int32 or int64."""
    if isinstance(out, Tensor):
        out._need_contiguous("elementwise: out")
        if out.read_only:
            raise ValueError("xdev.elementwise: out is read-only (its producer said so)")
        dtype = dtype or out.dtype
        count = out.numel if count is None else count
    if dtype is None or count is None:
        raise ValueError("xdev.elementwise: give dtype= and count= when out is not a Tensor")
    for i, x in enumerate(inputs):
        if isinstance(x, Tensor):
            x._need_contiguous(f"elementwise: input {i}")
    from ._interop import dtype_name
    dt = DTYPES[dtype_name(dtype)][0]
    ptrs = (C.c_void_p * max(len(inputs), 1))(
        *[_address(x, f"elementwise: input {i}") for i, x in enumerate(inputs)])
    call("xdev_elementwise", expression.encode(), dt, len(inputs), ptrs,
         C.c_void_p(_address(out, "elementwise: out")), int(count), _stream_handle(stream))
    return out
