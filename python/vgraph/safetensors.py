# SPDX-License-Identifier: Apache-2.0
"""safetensors files through vg's own reader and writer (vg_safetensors.h), as NumPy arrays."""
import ctypes

from . import _types as T
from ._errors import check, raise_python, ERR_INVALID_ARG, ERR_UNSUPPORTED
from ._lib import libmodels

_NP = {T.F32: "float32", T.F16: "float16", T.I32: "int32", T.I64: "int64", T.U8: "uint8"}
# safetensors dtypes vg reads but computes with none of: as the NumPy dtype of the same bytes
_NP_BY_NAME = {"F64": "float64", "I8": "int8", "I16": "int16", "U16": "uint16", "U32": "uint32",
               "U64": "uint64", "BOOL": "bool"}


def load(path):
    """{name: numpy array} (copies: the file is closed before returning). BF16 tensors come back
    as float32 (NumPy has no bfloat16)."""
    import numpy as np
    vg = libmodels()
    f = ctypes.c_void_p()
    check(vg.vg_st_open(str(path).encode(), ctypes.byref(f)))
    try:
        out = {}
        for i in range(vg.vg_st_count(f)):
            t = vg.vg_st_at(f, i).contents
            shape = tuple(t.shape[k] for k in range(t.ndim))
            raw = np.frombuffer(ctypes.string_at(t.data, t.nbytes), dtype=np.uint8)
            if t.dtype == T.BF16:
                a = (raw.view(np.uint16).astype(np.uint32) << 16).view(np.float32)
            elif t.dtype in _NP:
                a = raw.view(_NP[t.dtype])
            elif t.dtype_name.decode() in _NP_BY_NAME:
                a = raw.view(_NP_BY_NAME[t.dtype_name.decode()])
            else:  # F8_E4M3, F8_E5M2, ...: NumPy has no such type, and raw bytes would pass for numbers
                raise_python(ERR_UNSUPPORTED, f"safetensors.load: {path}: tensor {t.name.decode()!r} is "
                             f"{t.dtype_name.decode()}, which NumPy cannot represent")
            out[t.name.decode()] = a.reshape(shape).copy()
        return out
    finally:
        vg.vg_st_close(f)


def save(path, tensors):
    """Write {name: numpy array} (float32, float16, int32, int64, uint8)."""
    import numpy as np
    rev = {v: k for k, v in _NP.items()}
    keep, arr = [], (T.StWriteTensor * len(tensors))()
    for i, (name, a) in enumerate(tensors.items()):
        a = np.ascontiguousarray(a)
        if str(a.dtype) not in rev:
            raise_python(ERR_UNSUPPORTED, f"safetensors.save: tensor {name!r} is {a.dtype}; vg writes "
                         f"{', '.join(sorted(rev))}")
        if not isinstance(name, str) or not name or "\0" in name:
            raise_python(ERR_INVALID_ARG, f"safetensors.save: tensor name {name!r} (a non-empty string without NUL)")
        shape = (ctypes.c_int64 * max(a.ndim, 1))(*a.shape)
        keep += [a, shape, name.encode()]
        arr[i] = T.StWriteTensor(keep[-1], rev[str(a.dtype)], a.ndim, shape, a.ctypes.data)
    check(libmodels().vg_st_write(str(path).encode(), arr, len(tensors)))
