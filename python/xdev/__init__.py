# SPDX-License-Identifier: Apache-2.0
"""xdev - Python face of the xdev device runtime (libxdev through ctypes; no
compiled extension). torch.cuda's names where torch has one:

    import numpy as np, xdev
    x = np.arange(8, dtype=np.float32)
    t = xdev.from_dlpack(x)                     # no copy: NumPy's memory, on cpu:0
    m = xdev.compile(SOURCE, t.device)          # a kernel in xdev's C dialect
    m.scale(1, 8, 8, 2.0, t)                    # grid, block, arguments
    xdev.synchronize()

Devices (Device, device_count, current_device, set_device,
get_device_properties, synchronize), streams and events (Stream, Event,
current_stream, default_stream), memory (Memory, Tensor, empty, zeros,
tensor), DLPack (from_dlpack; Tensor.__dlpack__ / __dlpack_device__),
kernels (compile, Module, Kernel, elementwise), the memory snapshot and view,
seeding (manual_seed, manual_seed_all, seed, initial_seed, get/set_rng_state)
and random fills (rand, randn). Failures raise XdevError with xdev's status
and message. docs/python.md has the whole story; library_path() says which
libxdev was loaded and how it was found."""
from ._lib import LIBRARY_FOUND_BY, LIBRARY_PATH, LibraryNotFound, XdevError
from ._core import (Device, DeviceProperties, Event, Memory, Stream, current_device,
                    current_stream, default_device_type, default_stream, device_count,
                    get_device_properties, is_available, mem_get_info, pointer_info, set_device,
                    synchronize, version)
from ._interop import DTYPES, Tensor, empty, from_dlpack, tensor, zeros
from ._kernels import Kernel, Module, compile, compile_log, elementwise
from ._observe import (get_rng_state, initial_seed, manual_seed, manual_seed_all,
                       memory_snapshot, memory_snapshot_write, memory_view_html,
                       memory_view_write, rand, randn, seed, seed_all, set_rng_state)

__version__ = "0.1.0"


def library_path():
    """(path, how): the libxdev this package loaded and how it was found
    ("XDEV_LIBRARY", "installed beside the package", "inside the package",
    "the loader")."""
    return LIBRARY_PATH, LIBRARY_FOUND_BY


__all__ = [n for n in dir() if not n.startswith("_")]
