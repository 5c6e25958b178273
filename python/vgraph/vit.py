# SPDX-License-Identifier: Apache-2.0
"""Vision encoders (vg_vit.h): the vision towers of Qwen2.5-VL and Qwen3-VL through vg's runner."""
import ctypes

from . import _types as T
from . import dlpack as D
from ._arrays import VgAllocation, flavor, host_tensor, int_rows, like
from ._errors import check, raise_python, ERR_INVALID_ARG, ERR_STATE
from ._lib import libmodels, libvg
from .graph import MODES, run_info_dict

_PIXEL_DTYPES = {"float32": T.F32, "float16": T.F16, "bfloat16": T.BF16}
DTYPE_BY_NAME = {"float32": T.F32, "float16": T.F16, "bfloat16": T.BF16, None: T.DTYPE_COUNT}


def graph_options(o, who, mode, capture_sizes, max_capture_size, warmup, dtype):
    """Fill the graph fields that vg_vit_options and vg_lm_options share (o already holds the
    library's defaults: no capture sizes); returns the capture-size array, which must outlive
    the call that reads o."""
    if mode not in MODES:
        raise_python(ERR_INVALID_ARG, f"{who}: mode {mode!r} is not one of {sorted(MODES)}")
    if dtype not in DTYPE_BY_NAME:
        raise_python(ERR_INVALID_ARG, f"{who}: dtype {dtype!r} is not float32, bfloat16 or float16")
    o.mode = MODES[mode]
    arr = None
    if capture_sizes is not None:
        arr = (ctypes.c_int64 * len(capture_sizes))(*[int(s) for s in capture_sizes])
        o.capture_sizes = ctypes.cast(arr, ctypes.POINTER(ctypes.c_int64))
        o.num_capture_sizes = len(capture_sizes)
    o.max_capture_size = int(max_capture_size)
    o.warmup = int(bool(warmup))
    o.compute_dtype = DTYPE_BY_NAME[dtype]
    return arr


def info_dict(info):
    """A vg_vit_info or vg_lm_info as a dict: model_type as str, compute_dtype as its name."""
    d = {f: getattr(info, f) for f, _ in type(info)._fields_}
    d["model_type"] = info.model_type.decode()
    d["compute_dtype"] = T.DTYPES.get(info.compute_dtype)
    return d


class VisionOutput:
    """embeddings [S/merge², out_hidden] (and Qwen3-VL's deepstack features, same shape), plus what
    the call did: run (bucket, path, launches), device_ms, total_ms."""

    def __init__(self, embeddings, deepstack, run, device_ms, total_ms):
        self.embeddings = embeddings
        self.deepstack = deepstack
        self.run = run
        self.device_ms = device_ms
        self.total_ms = total_ms

    def __repr__(self):
        return f"<VisionOutput {tuple(self.embeddings.shape)} deepstack={len(self.deepstack)} {self.run['path']}>"


class VisionEncoder:
    """A Hugging Face model directory's vision tower (VisionEncoder(rt, path)) or a named synthetic
    configuration (VisionEncoder.synthetic(rt, "qwen2.5-vl-tiny")). Graph options: mode ("none",
    "piecewise", "full", "full_and_piecewise"), capture_sizes (token counts), max_capture_size,
    warmup (capture every bucket now), dtype (compute dtype: "float32", "bfloat16", "float16";
    None keeps the checkpoint's)."""

    def __init__(self, runtime, model_dir=None, *, mode="full_and_piecewise", capture_sizes=None,
                 max_capture_size=0, warmup=False, dtype=None, _synthetic=None):
        self.runtime = runtime
        self._res = None
        o, keep = self._options(mode, capture_sizes, max_capture_size, warmup, dtype)
        h = ctypes.c_void_p()
        m = libmodels()
        if _synthetic is not None:
            config, seed = _synthetic
            check(m.vg_vit_create_synthetic(runtime.handle, config.encode(), seed, o.compute_dtype if dtype else T.F32,
                                            ctypes.byref(o), ctypes.byref(h)))
        else:
            check(m.vg_vit_load(runtime.handle, str(model_dir).encode(), ctypes.byref(o), ctypes.byref(h)))
        del keep
        self._res = runtime._own(libmodels().vg_vit_free, h)
        self.info = self._info()

    @classmethod
    def synthetic(cls, runtime, config, seed=1, dtype="float32", **kw):
        """A named configuration ("qwen2.5-vl-7b", "qwen2.5-vl-3b", "qwen2.5-vl-tiny", "qwen3-vl-8b",
        "qwen3-vl-tiny") with deterministic synthetic weights."""
        return cls(runtime, None, dtype=dtype, _synthetic=(config, int(seed)), **kw)

    @staticmethod
    def _options(mode, capture_sizes, max_capture_size, warmup, dtype):
        o = T.VitOptions()
        libmodels().vg_vit_options_init(ctypes.byref(o))
        return o, graph_options(o, "VisionEncoder", mode, capture_sizes, max_capture_size, warmup, dtype)

    def reconfigure(self, *, mode="full_and_piecewise", capture_sizes=None, max_capture_size=0, warmup=False):
        """New graph options; every graph is dropped (the weights stay)."""
        o, keep = self._options(mode, capture_sizes, max_capture_size, warmup, None)
        check(libmodels().vg_vit_reconfigure(self.handle, ctypes.byref(o)))
        del keep

    @property
    def handle(self):
        if self._res is None or self._res.handle is None:
            raise_python(ERR_STATE, "VisionEncoder: closed")
        return self._res.handle

    def _info(self):
        i = T.VitInfo()
        check(libmodels().vg_vit_get_info(self.handle, ctypes.byref(i)))
        return info_dict(i)

    def runner_stats(self):
        from .graph import runner_stats
        return runner_stats(libmodels().vg_vit_runner(self.handle))

    def encode(self, pixel_values, grid_thw):
        """pixel_values [S, patch_dim] (float32, bfloat16 or float16; any DLPack array: host memory,
        or device memory of this runtime's device, e.g. a CUDA torch.Tensor on a cuda runtime, read
        in place) and grid_thw [n, 3] (t, h, w per image or video) -> VisionOutput. Results come
        back as the input's kind of array (NumPy for NumPy, torch on the input's device for torch),
        otherwise as vgraph.Tensor."""
        grid = int_rows(grid_thw, 3, "VisionEncoder.encode: grid_thw")
        garr = (ctypes.c_int64 * max(1, 3 * len(grid)))(*[v for r in grid for v in r])
        out = T.VitOutput()
        kind = flavor(pixel_values)
        device = getattr(pixel_values, "device", None) if kind == "torch" else None
        dev = pixel_values.__dlpack_device__() if hasattr(pixel_values, "__dlpack_device__") else (D.CPU, 0)
        m = libmodels()
        if dev[0] in D.HOST_DEVICES:
            t = host_tensor(pixel_values, "VisionEncoder.encode: pixel_values")
            rows, cols = self._shape(t.shape, t.dtype)
            check(m.vg_vit_encode(self.handle, ctypes.c_void_p(t.data_ptr), _PIXEL_DTYPES[t.dtype], rows, cols,
                                  garr, len(grid), ctypes.byref(out)))
        else:
            from ._native import Imported
            with Imported(self.runtime, pixel_values, stream=self._consumer_stream()) as imp:
                dt = {T.F32: "float32", T.F16: "float16", T.BF16: "bfloat16"}.get(imp.dtype)
                rows, cols = self._shape(imp.shape, dt)
                if len(imp.shape) == 2 and imp.strides[0] != cols and rows > 1:
                    raise_python(ERR_INVALID_ARG, "VisionEncoder.encode: pixel_values rows must be contiguous")
                check(m.vg_vit_encode_device(self.handle, ctypes.c_void_p(imp.ptr), _PIXEL_DTYPES[dt], rows, cols,
                                             garr, len(grid), ctypes.byref(out)))
        return self._result(out, kind, device)

    @staticmethod
    def _shape(shape, dtype):
        if dtype not in _PIXEL_DTYPES:
            raise_python(ERR_INVALID_ARG, f"VisionEncoder.encode: pixel_values must be float32, bfloat16 or "
                         f"float16, not {dtype}")
        if len(shape) != 2:
            raise_python(ERR_INVALID_ARG, f"VisionEncoder.encode: pixel_values must be 2-D [patches, patch_dim], "
                         f"got shape {tuple(shape)}")
        return shape[0], shape[1]

    def _result(self, out, kind, device):
        alloc = VgAllocation(ctypes.cast(out.embeddings, ctypes.c_void_p).value)
        rows, cols = out.rows, out.cols
        emb = D.Tensor(alloc.ptr, (rows, cols), "float32", owner=alloc)
        deep = [D.Tensor(ctypes.cast(out.deepstack[k], ctypes.c_void_p).value, (rows, cols), "float32", owner=alloc)
                for k in range(out.num_deepstack)]
        return VisionOutput(like(emb, kind, device), [like(x, kind, device) for x in deep],
                            run_info_dict(out.run), out.device_ms, out.total_ms)

    def _consumer_stream(self):
        """The native stream vg reads the input on (the runner's): a DLPack producer orders its
        pending work before it (torch: an event on its current stream that this stream waits for)."""
        from ._native import Stream
        s = Stream(self.runtime, libvg().vg_runner_stream(libmodels().vg_vit_runner(self.handle)), owned=False)
        return s.native

    def close(self):
        if self._res is not None:
            self._res.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
