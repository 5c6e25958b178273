# SPDX-License-Identifier: Apache-2.0
"""Finding and loading libvg and libvg_models, and the ctypes declarations of vg's public headers.

Where the libraries come from, first match wins:
  1. VGRAPH_LIBRARY_DIR: a directory holding libvg.so (a build tree's lib/, or an install's
     libdir);
  2. VG_PREFIX: an installed vg (its lib/ or lib/<multiarch>/);
  3. the copy built into the package by `pip install` (vgraph/lib/);
  4. the prefix recorded at build time when the package was installed against an existing vg
     (VG_PREFIX set during `pip install`, see _build_config.py).
libvg finds its backend plugins in <libdir>/vg/ (or the build tree's lib/) by itself, and
VG_BACKEND_PATH adds directories as for every vg program.
"""
import ctypes
import glob
import os

from . import _types as T

_HERE = os.path.dirname(os.path.abspath(__file__))


def _libdirs_of_prefix(prefix):
    return [os.path.join(prefix, "lib")] + sorted(glob.glob(os.path.join(prefix, "lib", "*-linux-gnu"))) + [
        os.path.join(prefix, "lib64")]


def _candidate_dirs():
    """(directory, where it came from) in the order they are tried."""
    out = []
    env_dir = os.environ.get("VGRAPH_LIBRARY_DIR")
    if env_dir:
        return [(env_dir, "VGRAPH_LIBRARY_DIR")]  # an explicit directory is the only one tried
    prefix = os.environ.get("VG_PREFIX")
    if prefix:
        return [(d, "VG_PREFIX") for d in _libdirs_of_prefix(prefix)]
    out += [(d, "the package") for d in _libdirs_of_prefix(_HERE)]
    try:
        from . import _build_config  # written by the CMake build of the package
        if _build_config.VG_PREFIX:
            out += [(d, "the vg the package was built against") for d in _libdirs_of_prefix(_build_config.VG_PREFIX)]
    except ImportError:
        pass
    return out


def _find(name):
    tried = []
    for d, why in _candidate_dirs():
        for fname in (f"lib{name}.so", f"lib{name}.so.0"):
            p = os.path.join(d, fname)
            if os.path.isfile(p):
                return p
        tried.append(f"{d} ({why})")
    raise OSError(f"vgraph: lib{name}.so not found; tried: {', '.join(tried) or 'nothing'}. "
                  "Install the package with `pip install ./python` (it builds vg), or point "
                  "VGRAPH_LIBRARY_DIR at the directory holding libvg.so, or VG_PREFIX at an installed vg.")


class _Libs:
    vg = None
    models = None


def _declare(lib, name, restype, *argtypes):
    try:
        fn = getattr(lib, name)
    except AttributeError:
        return None
    fn.restype = restype
    fn.argtypes = list(argtypes)
    return fn


def load():
    """libvg and libvg_models, loaded once (RTLD_GLOBAL, so libvg_models binds to this libvg)."""
    if _Libs.vg is None:
        vg = ctypes.CDLL(_find("vg"), mode=ctypes.RTLD_GLOBAL)
        models = ctypes.CDLL(_find("vg_models"), mode=ctypes.RTLD_GLOBAL)
        _declare_all(vg, models)
        _Libs.vg, _Libs.models = vg, models
    return _Libs.vg, _Libs.models


def libvg():
    return load()[0]


def libmodels():
    return load()[1]


def has(name):
    """Whether libvg or libvg_models exports `name` (features of newer versions)."""
    vg, models = load()
    return hasattr(vg, name) or hasattr(models, name)


def _declare_all(vg, m):
    P, I, I32, I64, U32, U64, D, C = (ctypes.c_void_p, ctypes.c_int, ctypes.c_int32, ctypes.c_int64,
                                      ctypes.c_uint32, ctypes.c_uint64, ctypes.c_double, ctypes.c_char_p)
    S = ctypes.c_int  # vg_status
    pp = ctypes.POINTER(ctypes.c_void_p)
    # vg.h
    _declare(vg, "vg_status_name", C, S)
    _declare(vg, "vg_abi_version", None, ctypes.POINTER(U32), ctypes.POINTER(U32))
    _declare(vg, "vg_last_error", C)
    _declare(vg, "vg_last_status", S)
    _declare(vg, "vg_error_clear", None)
    _declare(vg, "vg_error_set", S, S, C, C)  # called as (status, "%s", message)
    _declare(vg, "vg_log_set_level", None, I)
    _declare(vg, "vg_log_get_level", I)
    _declare(vg, "vg_log_set_callback", None, T.LOG_FN, P)
    _declare(vg, "vg_op_name", C, I)
    _declare(vg, "vg_cap_name", C, U64)
    _declare(vg, "vg_dtype_name", C, I)
    _declare(vg, "vg_dtype_size", ctypes.c_size_t, I)
    _declare(vg, "vg_backend_builtin_count", I)
    _declare(vg, "vg_backend_builtin_name", C, I)
    _declare(vg, "vg_backend_candidates", I, ctypes.POINTER(C), I)
    _declare(vg, "vg_backend_probe", S, C, ctypes.POINTER(T.ProbeReport))
    _declare(vg, "vg_runtime_options_init", None, ctypes.POINTER(T.RuntimeOptions))
    _declare(vg, "vg_runtime_open", S, ctypes.POINTER(T.RuntimeOptions), pp)
    _declare(vg, "vg_runtime_close", S, P)
    _declare(vg, "vg_runtime_backend_name", C, P)
    _declare(vg, "vg_runtime_plugin_path", C, P)
    _declare(vg, "vg_runtime_caps", U64, P)
    _declare(vg, "vg_runtime_op_capturable", I, P, I)
    _declare(vg, "vg_runtime_device_info", S, P, ctypes.POINTER(T.DeviceInfo))
    _declare(vg, "vg_runtime_op_support", U32, P, I, ctypes.POINTER(U32))
    # vg_device.h
    _declare(vg, "vg_mem_alloc", S, P, ctypes.c_size_t, pp)
    _declare(vg, "vg_mem_free", S, P, P)
    _declare(vg, "vg_mem_copy_h2d", S, P, P, P, ctypes.c_size_t)
    _declare(vg, "vg_mem_copy_d2h", S, P, P, P, ctypes.c_size_t)
    _declare(vg, "vg_mem_copy_d2d", S, P, P, P, ctypes.c_size_t)
    _declare(vg, "vg_stream_create", S, P, pp)
    _declare(vg, "vg_stream_destroy", S, P)
    _declare(vg, "vg_stream_sync", S, P)
    _declare(vg, "vg_stream_is_capturing", I, P)
    # vg_runner.h
    _declare(vg, "vg_graph_mode_name", C, I)
    _declare(vg, "vg_graph_mode_parse", S, C, ctypes.POINTER(I))
    _declare(vg, "vg_runner_default_sizes", I, ctypes.POINTER(ctypes.POINTER(I64)))
    _declare(vg, "vg_runner_options_init", None, ctypes.POINTER(T.RunnerOptions))
    _declare(vg, "vg_runner_create", S, P, ctypes.POINTER(T.ModelIface), ctypes.POINTER(T.RunnerOptions), pp)
    _declare(vg, "vg_runner_destroy", S, P)
    _declare(vg, "vg_runner_run", S, P, ctypes.POINTER(T.BatchDesc), P, ctypes.POINTER(T.RunInfo))
    _declare(vg, "vg_runner_warmup", S, P, ctypes.POINTER(T.BatchDesc), P, P)
    _declare(vg, "vg_runner_invalidate", S, P)
    _declare(vg, "vg_runner_stream", P, P)
    _declare(vg, "vg_runner_mode", I, P)
    _declare(vg, "vg_runner_bucket_for", I, P, I64)
    _declare(vg, "vg_runner_num_buckets", I, P)
    _declare(vg, "vg_runner_bucket_size", I64, P, I)
    _declare(vg, "vg_runner_stats", I, P, ctypes.POINTER(T.BucketStats), I, ctypes.POINTER(T.BucketStats))
    _declare(vg, "vg_runner_replay", S, P, ctypes.POINTER(T.BatchDesc), ctypes.POINTER(T.RunnerInput), I,
             ctypes.POINTER(T.RunInfo), ctypes.POINTER(I))
    _declare(vg, "vg_free", None, P)
    # vg_safetensors.h (libvg_models)
    _declare(m, "vg_st_open", S, C, pp)
    _declare(m, "vg_st_close", None, P)
    _declare(m, "vg_st_count", I, P)
    _declare(m, "vg_st_at", ctypes.POINTER(T.StTensor), P, I)
    _declare(m, "vg_st_write", S, C, ctypes.POINTER(T.StWriteTensor), I)
    # vg_vit.h (libvg_models)
    _declare(m, "vg_vit_options_init", None, ctypes.POINTER(T.VitOptions))
    _declare(m, "vg_vit_load", S, P, C, ctypes.POINTER(T.VitOptions), pp)
    _declare(m, "vg_vit_create_synthetic", S, P, C, U64, I, ctypes.POINTER(T.VitOptions), pp)
    _declare(m, "vg_vit_reconfigure", S, P, ctypes.POINTER(T.VitOptions))
    _declare(m, "vg_vit_free", S, P)
    _declare(m, "vg_vit_get_info", S, P, ctypes.POINTER(T.VitInfo))
    _declare(m, "vg_vit_runner", P, P)
    _declare(m, "vg_vit_encode", S, P, P, I, I64, I64, ctypes.POINTER(I64), I64, ctypes.POINTER(T.VitOutput))
    _declare(m, "vg_vit_encode_device", S, P, P, I, I64, I64, ctypes.POINTER(I64), I64,
             ctypes.POINTER(T.VitOutput))
    # vg_lm.h (libvg_models)
    _declare(m, "vg_lm_default_sizes", I, ctypes.POINTER(ctypes.POINTER(I64)))
    _declare(m, "vg_lm_options_init", None, ctypes.POINTER(T.LmOptions))
    _declare(m, "vg_lm_load", S, P, C, ctypes.POINTER(T.LmOptions), pp)
    _declare(m, "vg_lm_create_synthetic", S, P, C, U64, I, ctypes.POINTER(T.LmOptions), pp)
    _declare(m, "vg_lm_reconfigure", S, P, ctypes.POINTER(T.LmOptions))
    _declare(m, "vg_lm_free", S, P)
    _declare(m, "vg_lm_get_info", S, P, ctypes.POINTER(T.LmInfo))
    _declare(m, "vg_lm_runner", P, P)
    _declare(m, "vg_lm_seq_add", S, P, ctypes.POINTER(I32))
    _declare(m, "vg_lm_seq_free", S, P, I32)
    _declare(m, "vg_lm_seq_len", I64, P, I32)
    _declare(m, "vg_lm_step", S, P, ctypes.POINTER(T.LmSeqTokens), I, ctypes.POINTER(ctypes.c_float),
             ctypes.POINTER(I32), ctypes.POINTER(T.LmStepInfo))
    del D
    from . import _native
    _native.declare(vg, _declare)
