# SPDX-License-Identifier: Apache-2.0
"""xdev._observe - the memory snapshot and memory view (xdev/memviz.h) and the
seeding API and random fills (xdev/rng.h), torch.cuda's names."""
import ctypes as C
import json

from ._core import _dev, _stream_handle
from ._interop import DTYPES, dtype_name, empty
from ._lib import call, libc

# ------------------------------------------------------------------ memory snapshot and view


def _take_string(fn, *args):
    """Call an xdev function that returns malloc'ed text; the text as str, freed."""
    p = C.c_void_p()
    call(fn, *args, C.byref(p))
    try:
        return C.string_at(p.value).decode("utf-8", "replace") if p.value else ""
    finally:
        libc.free(p)


def memory_snapshot():
    """Every segment and block of every device, and the recorded history, as a
    dict (torch.cuda.memory_snapshot()'s schema, xdev/memviz.h)."""
    return json.loads(_take_string("xdev_memory_snapshot"))


def memory_snapshot_write(path):
    """The snapshot as JSON at `path` (what xdev-memviz reads)."""
    call("xdev_memory_snapshot_write", str(path).encode())


def memory_view_html(snapshot=None):
    """The memory view, one self-contained HTML page, of a snapshot (a dict or
    its JSON text; None: a snapshot taken now)."""
    if snapshot is None:
        text = _take_string("xdev_memory_snapshot")
    elif isinstance(snapshot, (str, bytes)):
        text = snapshot
    else:
        text = json.dumps(snapshot)
    data = text.encode() if isinstance(text, str) else text
    html, n = C.c_void_p(), C.c_size_t()
    call("xdev_memory_viz_html", data, len(data), C.byref(html), C.byref(n))
    try:
        return C.string_at(html.value, n.value).decode("utf-8", "replace")
    finally:
        libc.free(html)


def memory_view_write(path):
    """A snapshot of this process now, as the memory view page at `path`."""
    call("xdev_memory_viz_write", str(path).encode())


# ------------------------------------------------------------------ seeding


def manual_seed(seed):
    """Seed the current device of the default type (torch.cuda.manual_seed)."""
    call("xdev_manual_seed", int(seed) & (2**64 - 1))


def manual_seed_all(seed):
    """Seed every device of every backend, later ones too (torch.manual_seed)."""
    call("xdev_manual_seed_all", int(seed) & (2**64 - 1))


def seed():
    """A non-deterministic seed for the current device of the default type."""
    call("xdev_seed")


def seed_all():
    call("xdev_seed_all")


def initial_seed(device=None):
    s = C.c_uint64()
    call("xdev_initial_seed", _dev(device)._c(), C.byref(s))
    return s.value


RNG_STATE_SIZE = 24  # XDEV_RNG_STATE_SIZE


def get_rng_state(device=None):
    """The device's default generator state (24 bytes: seed and offset)."""
    buf = (C.c_char * RNG_STATE_SIZE)()
    call("xdev_get_rng_state", _dev(device)._c(), buf, RNG_STATE_SIZE)
    return bytes(buf)


def set_rng_state(state, device=None):
    state = bytes(state)
    call("xdev_set_rng_state", _dev(device)._c(), state, len(state))


def _fill_target(shape, dtype, device, out):
    if out is None:
        return empty(shape, dtype, device)
    out._need_contiguous("random fill")
    return out


def rand(shape=None, dtype="float32", device=None, *, out=None, stream=None):
    """Uniform in [0, 1) (torch.rand) from the device's default generator,
    queued on `stream`: float32 or float64; into `out` when given."""
    t = _fill_target(shape, dtype, device, out)
    call("xdev_rng_uniform", None, DTYPES[dtype_name(t.dtype)][0], C.c_void_p(t.data_ptr),
         t.numel, _stream_handle(stream))
    return t


def randn(shape=None, dtype="float32", device=None, *, mean=0.0, std=1.0, out=None,
          stream=None):
    """Normal (torch.randn) from the device's default generator."""
    t = _fill_target(shape, dtype, device, out)
    call("xdev_rng_normal", None, DTYPES[dtype_name(t.dtype)][0], C.c_void_p(t.data_ptr),
         t.numel, float(mean), float(std), _stream_handle(stream))
    return t


