# SPDX-License-Identifier: Apache-2.0
"""Vision encoders (vg_vit.h): the vision towers of Qwen2.5-VL and Qwen3-VL through vg's runner."""
import ctypes

from . import _types as T
from . import dlpack as D
from ._arrays import VgAllocation, flavor, host_tensor, int_rows, like
from ._errors import check, raise_python, ERR_INVALID_ARG
from ._lib import libmodels, libvg
from ._model import ModelBase, graph_options, info_dict
from .graph import run_info_dict

_PIXEL_DTYPES = {"float32": T.F32, "float16": T.F16, "bfloat16": T.BF16}
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


class VisionEncoder(ModelBase):
    """A Hugging Face model directory's vision tower (VisionEncoder(rt, path)) or a named synthetic
    configuration (VisionEncoder.synthetic(rt, "qwen2.5-vl-tiny")). Graph options: mode ("none",
    "piecewise", "full", "full_and_piecewise"), capture_sizes (token counts), max_capture_size,
    warmup (capture every bucket now), dtype (compute dtype: "float32", "bfloat16", "float16";
    None keeps the checkpoint's)."""

    _NAME, _API = "VisionEncoder", "vit"

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
        self._adopt(runtime, h)
        self.info = self._info()

    @classmethod
    def synthetic(cls, runtime, config, seed=1, dtype="float32", **kw):
        """A named configuration ("qwen2.5-vl-7b", "qwen2.5-vl-3b", "qwen2.5-vl-tiny", "qwen3-vl-8b",
        "qwen3-vl-tiny") with deterministic synthetic weights."""
        return cls(runtime, None, dtype=dtype, _synthetic=(config, int(seed)), **kw)

    @staticmethod
    def _options(mode, capture_sizes, max_capture_size, warmup, dtype):
        o = T.options_init(libmodels().vg_vit_options_init, T.VitOptions)
        return o, graph_options(o, "VisionEncoder", mode, capture_sizes, max_capture_size, warmup, dtype)

    def _info(self):
        i = T.VitInfo()
        check(libmodels().vg_vit_get_info(self.handle, ctypes.byref(i)))
        return info_dict(i)

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
