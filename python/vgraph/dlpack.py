# SPDX-License-Identifier: Apache-2.0
"""DLPack both ways, without copies: any array with __dlpack__ / __dlpack_device__ (NumPy, PyTorch,
CuPy, JAX, ...) becomes a vgraph.Tensor that points at the same memory, and a vgraph.Tensor is
itself a DLPack producer (torch.from_dlpack(t), numpy.from_dlpack(t)).

The structures are DLPack's ABI (dlpack/dlpack.h, version 1.x, with the unversioned
DLManagedTensor of 0.x for older consumers); capsules are named "dltensor_versioned" /
"dltensor" and renamed "used_..." by the consumer, which then calls the deleter once.

Lifetimes: a Tensor made by from_dlpack keeps the producer's managed tensor and calls its
deleter when the Tensor is collected. A capsule exported from a Tensor keeps that Tensor (and
whatever owns its memory) alive until the consumer calls the deleter.
"""
import ctypes
import threading
import weakref
from ctypes import POINTER, Structure, c_int32, c_int64, c_uint8, c_uint16, c_uint32, c_uint64, c_void_p

from ._errors import checked_int, raise_python, ERR_INVALID_ARG, ERR_UNSUPPORTED

# DLDeviceType
CPU, CUDA, CUDA_HOST, OPENCL, ROCM, CUDA_MANAGED = 1, 2, 3, 4, 10, 13
DEVICE_NAMES = {CPU: "cpu", CUDA: "cuda", CUDA_HOST: "cuda_host", OPENCL: "opencl", ROCM: "rocm",
                CUDA_MANAGED: "cuda_managed"}
HOST_DEVICES = (CPU, CUDA_HOST, CUDA_MANAGED)
# DLDataTypeCode
_INT, _UINT, _FLOAT, _BFLOAT, _BOOL = 0, 1, 2, 4, 6
FLAG_READ_ONLY, FLAG_IS_COPIED = 1, 2


class DLDevice(Structure):
    _fields_ = [("device_type", c_int32), ("device_id", c_int32)]


class DLDataType(Structure):
    _fields_ = [("code", c_uint8), ("bits", c_uint8), ("lanes", c_uint16)]


class DLTensor(Structure):
    _fields_ = [("data", c_void_p), ("device", DLDevice), ("ndim", c_int32), ("dtype", DLDataType),
                ("shape", POINTER(c_int64)), ("strides", POINTER(c_int64)), ("byte_offset", c_uint64)]


class DLManagedTensor(Structure):
    pass


DELETER = ctypes.CFUNCTYPE(None, POINTER(DLManagedTensor))
DLManagedTensor._fields_ = [("dl_tensor", DLTensor), ("manager_ctx", c_void_p), ("deleter", DELETER)]


class DLPackVersion(Structure):
    _fields_ = [("major", c_uint32), ("minor", c_uint32)]


class DLManagedTensorVersioned(Structure):
    pass


DELETER_V = ctypes.CFUNCTYPE(None, POINTER(DLManagedTensorVersioned))
DLManagedTensorVersioned._fields_ = [("version", DLPackVersion), ("manager_ctx", c_void_p),
                                     ("deleter", DELETER_V), ("flags", c_uint64), ("dl_tensor", DLTensor)]

# dtype names <-> (code, bits); vg's dtypes are the first six (vg_types.h order)
_DTYPES = {"float32": (_FLOAT, 32), "float16": (_FLOAT, 16), "bfloat16": (_BFLOAT, 16), "int32": (_INT, 32),
           "int64": (_INT, 64), "uint8": (_UINT, 8), "float64": (_FLOAT, 64), "int8": (_INT, 8),
           "int16": (_INT, 16), "bool": (_BOOL, 8)}
_DTYPE_OF = {v: k for k, v in _DTYPES.items()}
VG_DTYPE = {"float32": 0, "float16": 1, "bfloat16": 2, "int32": 3, "int64": 4, "uint8": 5}

_api = ctypes.pythonapi
_api.PyCapsule_New.restype = ctypes.py_object
_api.PyCapsule_New.argtypes = [c_void_p, ctypes.c_char_p, c_void_p]
_api.PyCapsule_GetPointer.restype = c_void_p
_api.PyCapsule_GetPointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
_api.PyCapsule_IsValid.restype = ctypes.c_int
_api.PyCapsule_IsValid.argtypes = [ctypes.py_object, ctypes.c_char_p]
_api.PyCapsule_SetName.restype = ctypes.c_int
_api.PyCapsule_SetName.argtypes = [ctypes.py_object, ctypes.c_char_p]
_api.PyCapsule_GetName.restype = ctypes.c_char_p
_api.PyCapsule_GetName.argtypes = [ctypes.py_object]

# The same functions taking the capsule as a raw PyObject*: for the capsule's destructor, which
# runs while the capsule is being freed (a py_object argument would revive it).
_raw_is_valid = ctypes.PYFUNCTYPE(ctypes.c_int, c_void_p, ctypes.c_char_p)(("PyCapsule_IsValid", _api))
_raw_get_pointer = ctypes.PYFUNCTYPE(c_void_p, c_void_p, ctypes.c_char_p)(("PyCapsule_GetPointer", _api))

# capsule names: module constants, so the pointers PyCapsule_New keeps stay valid
_NAME_V = b"dltensor_versioned"
_NAME = b"dltensor"
_USED_V = b"used_dltensor_versioned"
_USED = b"used_dltensor"


def dtype_itemsize(dtype):
    return _DTYPES[dtype][1] // 8


class Tensor:
    """A strided view of memory vgraph did not copy: data pointer, shape, strides (elements),
    dtype name ("float32", "bfloat16", ...), DLPack device (type, id), and `owner`, whatever keeps
    the memory alive. Exports itself through DLPack (__dlpack__, __dlpack_device__)."""

    def __init__(self, data_ptr, shape, dtype, device=(CPU, 0), strides=None, owner=None, readonly=False):
        if dtype not in _DTYPES:
            raise_python(ERR_INVALID_ARG, f"vgraph.Tensor: unknown dtype {dtype!r}")
        self.data_ptr = int(data_ptr or 0)
        self.shape = tuple(checked_int(s, "vgraph.Tensor: shape", 64) for s in shape)
        if any(s < 0 for s in self.shape):
            raise_python(ERR_INVALID_ARG, f"vgraph.Tensor: negative size in shape {self.shape}")
        self.dtype = dtype
        self.device = (int(device[0]), int(device[1]))
        self.strides = tuple(checked_int(s, "vgraph.Tensor: strides", 64) for s in strides) \
            if strides is not None else _contiguous(self.shape)
        if len(self.strides) != len(self.shape):
            raise_python(ERR_INVALID_ARG, f"vgraph.Tensor: {len(self.strides)} strides for {len(self.shape)} "
                         "dimensions")
        self.owner = owner
        self.readonly = readonly

    @property
    def ndim(self):
        return len(self.shape)

    @property
    def itemsize(self):
        return dtype_itemsize(self.dtype)

    @property
    def numel(self):
        n = 1
        for s in self.shape:
            n *= s
        return n

    @property
    def nbytes(self):
        return self.numel * self.itemsize

    @property
    def device_name(self):
        return DEVICE_NAMES.get(self.device[0], f"dlpack:{self.device[0]}")

    def is_contiguous(self):
        return all(st == c for st, c, sz in zip(self.strides, _contiguous(self.shape), self.shape) if sz > 1)

    def numpy(self):
        """A NumPy array over the same host memory (no copy)."""
        import numpy as np
        if self.device[0] not in HOST_DEVICES:
            raise_python(ERR_INVALID_ARG, f"vgraph.Tensor.numpy: the tensor is on {self.device_name}, not in host memory")
        if self.dtype == "bfloat16":
            raise_python(ERR_UNSUPPORTED, "vgraph.Tensor.numpy: NumPy has no bfloat16")
        return np.from_dlpack(self)

    def __dlpack_device__(self):
        return self.device

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        if copy:
            raise BufferError("vgraph.Tensor exports its memory without copies (copy=True refused)")
        if dl_device is not None and tuple(dl_device) != self.device:
            raise BufferError(f"vgraph.Tensor is on {self.device}, not {tuple(dl_device)}")
        versioned = max_version is not None and int(max_version[0]) >= 1
        if self.readonly and not versioned:  # DLPack 0.x has no read-only flag: the consumer would write
            raise BufferError("vgraph.Tensor is read-only, which only DLPack 1.0 (max_version=(1, 0)) can say")
        return _export(self, versioned)

    def __repr__(self):
        return f"<vgraph.Tensor {self.dtype}{list(self.shape)} on {self.device_name}:{self.device[1]} at 0x{self.data_ptr:x}>"


def _contiguous(shape):
    st, acc = [], 1
    for s in reversed(shape):
        st.append(acc)
        acc *= max(s, 1)
    return tuple(reversed(st))


# ---- export: a Tensor as a capsule -----------------------------------------------------------

_live = {}  # address of an exported managed tensor -> (struct, arrays, tensor): kept until deleted
_live_lock = threading.Lock()


def _release(addr):
    with _live_lock:
        _live.pop(addr, None)


@DELETER_V
def _deleter_v(p):
    _release(ctypes.cast(p, c_void_p).value)


@DELETER
def _deleter(p):
    _release(ctypes.cast(p, c_void_p).value)


_CAPSULE_DESTRUCTOR = ctypes.CFUNCTYPE(None, c_void_p)


@_CAPSULE_DESTRUCTOR
def _capsule_destructor(cap_addr):
    # A capsule never consumed still holds its managed tensor: call its deleter (DLPack's rule).
    for name, kind in ((_NAME_V, DLManagedTensorVersioned), (_NAME, DLManagedTensor)):
        if _raw_is_valid(cap_addr, name):
            p = ctypes.cast(_raw_get_pointer(cap_addr, name), POINTER(kind))
            if p.contents.deleter:
                p.contents.deleter(p)
            return


def _export(t, versioned):
    shape = (c_int64 * max(t.ndim, 1))(*t.shape)
    strides = (c_int64 * max(t.ndim, 1))(*t.strides)
    code, bits = _DTYPES[t.dtype]
    dl = DLTensor(c_void_p(t.data_ptr), DLDevice(*t.device), t.ndim, DLDataType(code, bits, 1),
                  ctypes.cast(shape, POINTER(c_int64)), ctypes.cast(strides, POINTER(c_int64)), 0)
    if versioned:
        m = DLManagedTensorVersioned(DLPackVersion(1, 0), None, _deleter_v, FLAG_READ_ONLY if t.readonly else 0, dl)
        name = _NAME_V
    else:
        m = DLManagedTensor(dl, None, _deleter)
        name = _NAME
    addr = ctypes.addressof(m)
    with _live_lock:
        _live[addr] = (m, shape, strides, t)
    return _api.PyCapsule_New(addr, name, ctypes.cast(_capsule_destructor, c_void_p))


# ---- import: any DLPack producer as a Tensor -------------------------------------------------

class _Managed:
    """Owns a consumed managed tensor: calls the producer's deleter once, when collected."""

    def __init__(self, addr, versioned, producer):
        self.producer = producer  # some producers (NumPy 1.x) also want the source kept
        kind = DLManagedTensorVersioned if versioned else DLManagedTensor
        p = ctypes.cast(addr, POINTER(kind))
        self._fin = weakref.finalize(self, _call_deleter, addr, versioned)
        self.ptr = p


def _call_deleter(addr, versioned):
    kind = DLManagedTensorVersioned if versioned else DLManagedTensor
    p = ctypes.cast(addr, POINTER(kind))
    if p.contents.deleter:
        p.contents.deleter(p)


def from_dlpack(obj, stream=None):
    """A Tensor over obj's memory, without a copy. obj: any object with __dlpack__ (or a DLPack
    capsule). stream: for device arrays, the consumer stream the producer must order its work
    before (CUDA: an int cudaStream_t; None asks for the legacy default stream, -1 for none)."""
    if isinstance(obj, Tensor):
        return obj
    if type(obj).__name__ == "PyCapsule":
        cap, producer = obj, None
    elif hasattr(obj, "__dlpack__"):
        producer = obj
        kwargs = {}
        dev = obj.__dlpack_device__() if hasattr(obj, "__dlpack_device__") else (CPU, 0)
        if dev[0] not in HOST_DEVICES:
            kwargs["stream"] = stream
        try:
            cap = obj.__dlpack__(max_version=(1, 0), **kwargs)
        except TypeError:  # a producer of DLPack 0.x (no max_version)
            cap = obj.__dlpack__(**kwargs)
    else:
        raise_python(ERR_INVALID_ARG, f"vgraph: {type(obj).__name__} is not a DLPack array (no __dlpack__)")
    if _api.PyCapsule_IsValid(cap, _NAME_V):
        addr = _api.PyCapsule_GetPointer(cap, _NAME_V)
        _api.PyCapsule_SetName(cap, _USED_V)
        versioned = True
    elif _api.PyCapsule_IsValid(cap, _NAME):
        addr = _api.PyCapsule_GetPointer(cap, _NAME)
        _api.PyCapsule_SetName(cap, _USED)
        versioned = False
    else:
        raise_python(ERR_INVALID_ARG, "vgraph: the DLPack capsule is already consumed or not a DLPack tensor")
    owner = _Managed(addr, versioned, producer)
    mt = owner.ptr.contents
    if versioned and mt.version.major != 1:
        raise_python(ERR_UNSUPPORTED, f"vgraph: DLPack version {mt.version.major}.{mt.version.minor} (1.x is supported)")
    dl = mt.dl_tensor
    key = (dl.dtype.code, dl.dtype.bits)
    if dl.dtype.lanes != 1 or key not in _DTYPE_OF:
        raise_python(ERR_UNSUPPORTED, f"vgraph: DLPack dtype code {dl.dtype.code} bits {dl.dtype.bits} "
                     f"lanes {dl.dtype.lanes} is not supported")
    shape = [dl.shape[i] for i in range(dl.ndim)]
    strides = [dl.strides[i] for i in range(dl.ndim)] if dl.strides else None
    readonly = bool(versioned and (mt.flags & FLAG_READ_ONLY))
    return Tensor((dl.data or 0) + dl.byte_offset, shape, _DTYPE_OF[key], (dl.device.device_type, dl.device.device_id),
                  strides, owner=owner, readonly=readonly)
