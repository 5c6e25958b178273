# SPDX-License-Identifier: Apache-2.0
"""vg_native.h and vg_dlpack.h (plugin ABI 1.3): native handles, wrapped streams, registered
memory, the foreign-capture capability, named backend options and DLPack import/export.

A libvg older than these headers lacks the symbols: each feature then says so with a VgError
(VG_ERR_UNSUPPORTED) instead of failing on a missing symbol."""
import ctypes

from . import _types as T
from ._errors import check, raise_python, ERR_INVALID_ARG, ERR_STATE, ERR_UNSUPPORTED


def declare(vg, _declare):
    P, I, S, C = ctypes.c_void_p, ctypes.c_int, ctypes.c_int, ctypes.c_char_p
    pp = ctypes.POINTER(ctypes.c_void_p)
    _declare(vg, "vg_native_api_name", C, I)
    _declare(vg, "vg_runtime_native_device", S, P, ctypes.POINTER(T.NativeDevice))
    _declare(vg, "vg_runtime_foreign_capture", I, P)
    _declare(vg, "vg_runtime_option_names", I, P, ctypes.POINTER(C), I)
    _declare(vg, "vg_stream_native", S, P, pp)
    _declare(vg, "vg_stream_wrap", S, P, P, pp)
    _declare(vg, "vg_stream_is_wrapped", I, P)
    _declare(vg, "vg_mem_native", S, P, P, ctypes.POINTER(T.NativeMem))
    _declare(vg, "vg_mem_register", S, P, P, ctypes.c_size_t, pp)
    _declare(vg, "vg_mem_unregister", S, P, P)
    _declare(vg, "vg_dlpack_device", S, P, P)  # DLDevice*
    _declare(vg, "vg_dlpack_export", S, P, ctypes.POINTER(T.DlpackTensor), pp)
    _declare(vg, "vg_dlpack_import", S, P, P, ctypes.POINTER(T.DlpackTensor))
    _declare(vg, "vg_dlpack_release", S, ctypes.POINTER(T.DlpackTensor))


def _need(name, what):
    from ._lib import has, libvg
    if not has(name):
        raise_python(ERR_UNSUPPORTED, f"{what}: this libvg predates native handles (no {name}; ABI 1.3 needed)")
    return getattr(libvg(), name)


def runtime_options_apply(o, options):
    """Fill vg_runtime_options.options from a dict; returns what must stay alive until open."""
    if not options:
        return None
    from ._lib import has
    if not has("vg_runtime_option_names"):
        raise_python(ERR_UNSUPPORTED, "runtime options: this libvg has no named backend options (ABI 1.3 needed)")
    names = [(str(k).encode(), str(v).encode()) for k, v in options.items()]
    arr = (T.Option * len(names))(*[T.Option(k, v) for k, v in names])
    o.options = ctypes.cast(arr, ctypes.POINTER(T.Option))
    o.num_options = len(names)
    return arr, names


def option_names(rt):
    """The backend option names the runtime's backend accepts (VG_CUDA_GEMM, ...)."""
    fn = _need("vg_runtime_option_names", "option_names")
    n = fn(rt.handle, None, 0)
    arr = (ctypes.c_char_p * max(n, 1))()
    n = fn(rt.handle, arr, n)
    return [arr[i].decode() for i in range(n)]


def captures_foreign(rt):
    from ._lib import has, libvg
    if not has("vg_runtime_foreign_capture"):
        return False
    return bool(libvg().vg_runtime_foreign_capture(rt.handle))


def native_device(rt):
    """{"api": "cuda", "ordinal": 0, "platform"/"device"/"context": OpenCL handles as ints}."""
    fn = _need("vg_runtime_native_device", "native_device")
    d = T.NativeDevice()
    d.struct_size = ctypes.sizeof(d)
    check(fn(rt.handle, ctypes.byref(d)))
    return {"api": T.NATIVE_APIS.get(d.api, str(d.api)), "ordinal": d.ordinal, "platform": d.platform,
            "device": d.device, "context": d.context}


class Stream:
    """A vg stream: vg's own (Stream(rt)) or a wrap of the caller's native stream
    (Stream.wrap(rt, torch.cuda.current_stream().cuda_stream)), which vg never destroys."""

    def __init__(self, rt, handle=None, wrapped=False, owned=True, owner=None):
        from ._lib import libvg
        self.rt = rt
        self.wrapped = wrapped
        if handle is None:
            h = ctypes.c_void_p()
            check(libvg().vg_stream_create(rt.handle, ctypes.byref(h)))
            handle = h
        self._h = handle
        # owned=False: a stream of vg's (a runner's), borrowed, never destroyed here; it lives as
        # long as `owner` (the runtime's record of what made it) is open
        self._res = rt._own(libvg().vg_stream_destroy, handle) if owned else None
        self._life = self._res if owned else owner  # the record whose close ends this stream, if any

    @property
    def handle(self):
        """The vg_stream; VgError (VG_ERR_STATE) once it, its runtime or its runner is closed."""
        if self._h is None or (self._life is not None and self._life.handle is None):
            raise_python(ERR_STATE, "Stream: closed (or the runtime or runner it belongs to)")
        return self._h

    @classmethod
    def wrap(cls, rt, native):
        fn = _need("vg_stream_wrap", "Stream.wrap")
        h = ctypes.c_void_p()
        check(fn(rt.handle, ctypes.c_void_p(int(native)), ctypes.byref(h)))
        return cls(rt, h, wrapped=True)

    @property
    def native(self):
        """The native stream (cudaStream_t, cl_command_queue, ...) as an int."""
        fn = _need("vg_stream_native", "Stream.native")
        out = ctypes.c_void_p()
        check(fn(self.handle, ctypes.byref(out)))
        return out.value or 0

    def synchronize(self):
        from ._lib import libvg
        check(libvg().vg_stream_sync(self.handle))

    def close(self):
        self._h = None
        if self._res is not None:
            self._res.close()

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass


class Imported:
    """A DLPack tensor adopted by vg (vg_dlpack_import): `ptr` is a vg device address of the
    runtime, valid until release() (which calls the producer's deleter)."""

    def __init__(self, rt, obj, stream=None):
        from . import dlpack as D
        fn = _need("vg_dlpack_import", "dlpack import")
        self.rt = rt
        self._res = None
        kwargs = {}
        dev = obj.__dlpack_device__()
        if dev[0] not in D.HOST_DEVICES:
            kwargs["stream"] = stream
        try:
            cap = obj.__dlpack__(max_version=(1, 0), **kwargs)
        except TypeError:
            raise_python(ERR_INVALID_ARG, f"dlpack import: {type(obj).__name__} only speaks DLPack 0.x "
                         "(vg imports DLManagedTensorVersioned)")
        if not D._api.PyCapsule_IsValid(cap, D._NAME_V):
            raise_python(ERR_INVALID_ARG, "dlpack import: the producer returned no versioned DLPack capsule")
        addr = D._api.PyCapsule_GetPointer(cap, D._NAME_V)
        t = T.DlpackTensor()
        t.struct_size = ctypes.sizeof(t)
        check(fn(rt.handle, ctypes.c_void_p(addr), ctypes.byref(t)))
        D._api.PyCapsule_SetName(cap, D._USED_V)  # vg owns it now; released by vg_dlpack_release
        # released by release(), or by the runtime's close before its device, whichever is first
        release = _need("vg_dlpack_release", "dlpack release")
        self._res = rt._own(lambda held: release(ctypes.byref(held)), t)
        self._ptr = t.ptr
        self.dtype = t.dtype
        self.shape = tuple(t.shape[i] for i in range(t.ndim))
        self.strides = tuple(t.strides[i] for i in range(t.ndim))

    @property
    def ptr(self):
        """The vg device address; VgError (VG_ERR_STATE) once released, by release() or by the
        runtime's close, rather than an address of freed memory."""
        if self._res is None or self._res.handle is None:
            raise_python(ERR_STATE, "Imported: released (by release() or by its runtime's close)")
        return self._ptr

    def release(self):
        if self._res is not None:
            r, self._res = self._res, None
            r.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.release()

    def __del__(self):
        try:
            self.release()
        except Exception:
            pass
