# SPDX-License-Identifier: Apache-2.0
"""What the model classes share (VisionEncoder, LanguageModel): their graph options, their info
as a dict, and a base that holds the model's handle (closed with the runtime or explicitly), its
runner's statistics and its reconfiguration."""
import ctypes

from . import _types as T
from ._errors import check, raise_python, ERR_INVALID_ARG, ERR_STATE
from ._lib import libmodels
from .graph import MODES

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



class ModelBase:
    """A model of libvg_models. A subclass sets _NAME (for messages), _API ("vit" or "lm": the
    vg_<api>_* functions) and _options(mode, capture_sizes, max_capture_size, warmup, dtype), and
    calls _adopt(runtime, handle) once the model is created."""

    _NAME = "model"
    _API = None

    def _adopt(self, runtime, h):
        self._res = runtime._own(getattr(libmodels(), f"vg_{self._API}_free"), h)

    def _fn(self, name):
        return getattr(libmodels(), f"vg_{self._API}_{name}")

    @property
    def handle(self):
        if getattr(self, "_res", None) is None or self._res.handle is None:
            raise_python(ERR_STATE, f"{self._NAME}: closed")
        return self._res.handle

    def reconfigure(self, *, mode="full_and_piecewise", capture_sizes=None, max_capture_size=0, warmup=False):
        """New graph options; every graph is dropped (the weights stay)."""
        o, keep = self._options(mode, capture_sizes, max_capture_size, warmup, None)
        check(self._fn("reconfigure")(self.handle, ctypes.byref(o)))
        del keep

    def runner_stats(self):
        from .graph import runner_stats
        return runner_stats(self._fn("runner")(self.handle))

    def close(self):
        if getattr(self, "_res", None) is not None:
            self._res.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
