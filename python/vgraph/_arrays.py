# SPDX-License-Identifier: Apache-2.0
"""Results in the caller's array library: vg's host outputs become NumPy or PyTorch arrays over
the same memory (DLPack, no copy), moved to the device of the input when that was a device."""
import ctypes
import weakref

from . import dlpack as D
from ._lib import libvg


class VgAllocation:
    """Host memory vg allocated for the caller (vg_free'd when the last view is gone)."""

    def __init__(self, ptr):
        self.ptr = ptr
        weakref.finalize(self, libvg().vg_free, ctypes.c_void_p(ptr))


def flavor(obj):
    """"torch", "numpy" or None: which library a caller's array comes from."""
    mod = type(obj).__module__.split(".")[0]
    return mod if mod in ("torch", "numpy") else None


def like(t, flavor_name, device=None):
    """Tensor t (host memory) as an array of flavor_name; for torch, on `device` (a copy when it
    is not the host: vg's model APIs return host memory)."""
    if flavor_name == "numpy":
        return t.numpy()
    if flavor_name == "torch":
        import torch
        out = torch.from_dlpack(t)
        if device is not None and device.type != "cpu":
            out = out.to(device, non_blocking=False)
        return out
    return t


def host_tensor(obj, what):
    """A host-memory, C-contiguous D.Tensor over obj (no copy where obj already is one)."""
    if hasattr(obj, "__dlpack__"):
        t = D.from_dlpack(obj)
    else:
        import numpy as np
        t = D.from_dlpack(np.ascontiguousarray(obj))
    if t.device[0] not in D.HOST_DEVICES:
        from ._errors import raise_python, ERR_INVALID_ARG
        raise_python(ERR_INVALID_ARG, f"{what}: expected host memory, got {t.device_name}")
    if not t.is_contiguous():
        from ._errors import raise_python, ERR_INVALID_ARG
        raise_python(ERR_INVALID_ARG, f"{what}: the array is not contiguous (strides {t.strides} for shape {t.shape})")
    return t


def int_rows(obj, width, what):
    """A list of int tuples of `width` from any array-like (lists, NumPy, a torch tensor on any
    device: small metadata such as grid_thw is read on the host)."""
    from ._errors import checked_int, raise_python, ERR_INVALID_ARG
    rows = obj.tolist() if hasattr(obj, "tolist") else list(obj)
    if rows and not isinstance(rows[0], (list, tuple)):
        rows = [rows]
    out = []
    for r in rows:
        if len(r) != width:
            raise_python(ERR_INVALID_ARG, f"{what}: each row needs {width} values, got {list(r)}")
        out.append(tuple(checked_int(v, what, 64) for v in r))
    return out
