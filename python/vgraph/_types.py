# SPDX-License-Identifier: Apache-2.0
"""ctypes mirrors of the structures of vg's public headers (include/vg/*.h), field for field."""
import ctypes
from ctypes import (POINTER, Structure, c_char, c_char_p, c_double, c_float, c_int, c_int32, c_int64,
                    c_uint8, c_uint32, c_uint64, c_void_p)

c_enum = c_int

# vg_types.h
DTYPES = {0: "float32", 1: "float16", 2: "bfloat16", 3: "int32", 4: "int64", 5: "uint8"}
F32, F16, BF16, I32, I64, U8, DTYPE_COUNT = 0, 1, 2, 3, 4, 5, 6

CAP_GRAPH = 1 << 0
CAP_GRAPH_UPDATE = 1 << 1
CAP_IPC = 1 << 2
CAP_PINNED_HOST = 1 << 3

LOG_FN = ctypes.CFUNCTYPE(None, c_int, c_char_p, c_void_p)


class DeviceInfo(Structure):
    _fields_ = [("struct_size", c_uint32), ("name", c_char * 128), ("mem_total", c_uint64),
                ("mem_free", c_uint64), ("caps", c_uint64), ("capturable_ops", c_uint64),
                ("arch_major", c_int32), ("arch_minor", c_int32), ("compute_units", c_int32),
                ("index", c_int32)]


PROBE_MAX_DEVICES = 16


class ProbeReport(Structure):
    _fields_ = [("struct_size", c_uint32), ("request", c_char * 512), ("path", c_char * 1024),
                ("name", c_char * 64), ("version", c_char * 128), ("abi_major", c_uint32),
                ("abi_minor", c_uint32), ("score", c_int32), ("loaded", c_int), ("status", c_enum),
                ("error", c_char * 4096), ("device_count", c_int),
                ("devices", DeviceInfo * PROBE_MAX_DEVICES), ("device_status", c_enum * PROBE_MAX_DEVICES)]


class Option(Structure):
    _fields_ = [("name", c_char_p), ("value", c_char_p)]


class RuntimeOptions(Structure):
    _fields_ = [("struct_size", c_uint32), ("backend", c_char_p), ("device", c_int),
                ("options", POINTER(Option)), ("num_options", c_int)]


# vg_native.h (ABI 1.3)
CAP_NATIVE = 1 << 4
CAP_FOREIGN_CAPTURE = 1 << 5
# device-side loops (ABI 1.4, vg_device.h)
CAP_GRAPH_LOOP = 1 << 6
CAP_COMM = 1 << 7  # communicators (vg_comm.h, ABI 1.5)
CAP_COMM_CAPTURE = 1 << 8
NATIVE_APIS = {0: "none", 1: "host", 2: "cuda", 3: "hip", 4: "opencl", 5: "vendor"}


class NativeDevice(Structure):
    _fields_ = [("struct_size", c_uint32), ("api", c_enum), ("ordinal", c_int32), ("platform", c_void_p),
                ("device", c_void_p), ("context", c_void_p)]


class NativeMem(Structure):
    _fields_ = [("struct_size", c_uint32), ("handle", c_void_p), ("offset", c_uint64), ("bytes", c_uint64),
                ("registered", c_int32)]


DLPACK_MAX_DIMS = 8
RELEASE_FN = ctypes.CFUNCTYPE(None, c_void_p)


class DlpackTensor(Structure):
    _fields_ = [("struct_size", c_uint32), ("ptr", c_void_p), ("dtype", c_enum), ("ndim", c_int32),
                ("shape", c_int64 * DLPACK_MAX_DIMS), ("strides", c_int64 * DLPACK_MAX_DIMS),
                ("has_strides", c_int32), ("read_only", c_int32), ("release", RELEASE_FN),
                ("release_user", c_void_p), ("priv_", c_void_p)]


# vg_runner.h
class BatchDesc(Structure):
    _fields_ = [("num_tokens", c_int64), ("num_requests", c_int32), ("uniform", c_uint8),
                ("reserved", c_uint8 * 3), ("variant", c_uint32)]


class Piece(Structure):
    pass


PIECE_RUN = ctypes.CFUNCTYPE(c_int, c_void_p, c_void_p, POINTER(Piece), POINTER(BatchDesc), c_void_p)
PIECE_GRAPH_SAFE = ctypes.CFUNCTYPE(c_int, c_void_p, POINTER(BatchDesc))
Piece._fields_ = [("name", c_char_p), ("run", PIECE_RUN), ("flags", c_uint32),
                  ("ops_used", POINTER(c_int)), ("num_ops_used", c_int),
                  ("graph_safe", PIECE_GRAPH_SAFE), ("arg", c_int64)]
PIECE_SPLITTING = 1 << 0
PIECE_FOREIGN = 1 << 1

RESERVE_FN = ctypes.CFUNCTYPE(c_int, c_void_p, c_void_p, POINTER(BatchDesc))
PREPARE_FN = ctypes.CFUNCTYPE(c_int, c_void_p, c_void_p, POINTER(BatchDesc), POINTER(BatchDesc), c_void_p,
                              c_void_p)
ADDRESSES_FN = ctypes.CFUNCTYPE(c_int, c_void_p, c_void_p, POINTER(c_void_p), c_int)


class ModelIface(Structure):
    _fields_ = [("struct_size", c_uint32), ("model", c_void_p), ("pieces", POINTER(Piece)),
                ("num_pieces", c_int), ("reserve", RESERVE_FN), ("prepare", PREPARE_FN),
                ("addresses", ADDRESSES_FN)]


MODE_NONE, MODE_PIECEWISE, MODE_FULL, MODE_FULL_AND_PIECEWISE = 0, 1, 2, 3


class RunnerOptions(Structure):
    _fields_ = [("struct_size", c_uint32), ("mode", c_enum), ("capture_sizes", POINTER(c_int64)),
                ("num_capture_sizes", c_int), ("max_capture_size", c_int64), ("graph_memory_budget", c_uint64),
                ("stream", c_void_p), ("debug_addresses", c_int), ("eager_first", c_int),
                ("profile_pieces", c_int)]


RUN_PATHS = {0: "eager", 1: "full", 2: "piecewise"}


class RunInfo(Structure):
    _fields_ = [("padded_tokens", c_int64), ("bucket", c_int), ("path", c_enum), ("graph_launches", c_int),
                ("eager_pieces", c_int), ("captures", c_int), ("host_ms", c_double)]


class RunnerInput(Structure):  # vg_runner_input (vg_runner_replay)
    _fields_ = [("src", c_void_p), ("dst", c_void_p), ("row_bytes", ctypes.c_size_t), ("dst_bytes", ctypes.c_size_t)]


class BucketStats(Structure):
    _fields_ = [("size", c_int64), ("hits", c_uint64), ("captures", c_uint64), ("replays", c_uint64),
                ("eager_runs", c_uint64), ("updates", c_uint64), ("capture_failures", c_uint64),
                ("evictions", c_uint64), ("real_tokens", c_uint64), ("padded_tokens", c_uint64),
                ("capture_ms", c_double), ("graph_bytes", c_uint64), ("live_graphs", c_int)]


# vg_safetensors.h
ST_MAX_DIMS = 8


class StTensor(Structure):
    _fields_ = [("name", c_char_p), ("dtype_name", c_char_p), ("dtype", c_enum), ("elem_size", ctypes.c_size_t),
                ("ndim", c_int), ("shape", c_int64 * ST_MAX_DIMS), ("numel", c_uint64), ("data", c_void_p),
                ("nbytes", ctypes.c_size_t)]


class StWriteTensor(Structure):
    _fields_ = [("name", c_char_p), ("dtype", c_enum), ("ndim", c_int), ("shape", POINTER(c_int64)),
                ("data", c_void_p)]


# vg_vit.h
class VitOptions(Structure):
    _fields_ = [("struct_size", c_uint32), ("mode", c_enum), ("capture_sizes", POINTER(c_int64)),
                ("num_capture_sizes", c_int), ("max_capture_size", c_int64), ("warmup", c_int),
                ("compute_dtype", c_enum), ("profile_pieces", c_int)]


class VitInfo(Structure):
    _fields_ = [("model_type", c_char * 32), ("flops_per_patch_linear", c_double), ("depth", c_int),
                ("hidden", c_int), ("heads", c_int), ("head_dim", c_int), ("intermediate", c_int),
                ("out_hidden", c_int), ("patch", c_int), ("temporal_patch", c_int), ("spatial_merge", c_int),
                ("in_channels", c_int), ("window_size", c_int), ("patch_dim", c_int64),
                ("compute_dtype", c_enum), ("weight_bytes", c_uint64), ("num_position_embeddings", c_int),
                ("num_deepstack", c_int)]


class VitOutput(Structure):
    _fields_ = [("embeddings", POINTER(c_float)), ("rows", c_int64), ("cols", c_int64), ("run", RunInfo),
                ("device_ms", c_double), ("total_ms", c_double), ("num_deepstack", c_int),
                ("deepstack", POINTER(POINTER(c_float)))]


# vg_lm.h
LM_MAX_EOS = 16  # VG_LM_MAX_EOS


class LmOptions(Structure):
    _fields_ = [("struct_size", c_uint32), ("mode", c_enum), ("capture_sizes", POINTER(c_int64)),
                ("num_capture_sizes", c_int), ("max_capture_size", c_int64), ("warmup", c_int),
                ("compute_dtype", c_enum), ("block_size", c_int), ("num_blocks", c_int64),
                ("kv_memory_fraction", c_double), ("max_seqs", c_int), ("max_seq_len", c_int64),
                ("profile_pieces", c_int), ("comm", c_void_p)]


class LmInfo(Structure):
    _fields_ = [("model_type", c_char * 32), ("layers", c_int), ("hidden", c_int), ("heads", c_int),
                ("kv_heads", c_int), ("head_dim", c_int), ("intermediate", c_int), ("vocab", c_int),
                ("max_position", c_int64), ("rms_eps", c_float), ("rope_theta", c_float),
                ("tied_embeddings", c_int), ("qkv_bias", c_int), ("qk_norm", c_int), ("compute_dtype", c_enum),
                ("weight_bytes", c_uint64), ("block_size", c_int), ("num_blocks", c_int64),
                ("free_blocks", c_int64), ("max_blocks_per_seq", c_int), ("kv_bytes", c_uint64),
                ("max_seqs", c_int), ("live_seqs", c_int), ("num_eos", c_int), ("eos_ids", c_int32 * LM_MAX_EOS),
                ("tp_rank", c_int), ("tp_size", c_int)]


class LmSeqTokens(Structure):
    _fields_ = [("seq", c_int32), ("tokens", POINTER(c_int32)), ("num_tokens", c_int32)]


class LmStepInfo(Structure):
    _fields_ = [("run", RunInfo), ("num_tokens", c_int64), ("uniform", c_int), ("total_ms", c_double)]


# The largest options struct a library's init function may fill: room for members appended after
# this package was written, so that init never writes past what it was given.
_INIT_SCRATCH = 4096


def options_init(init, cls, versioned=False):
    """A `cls` filled by the library's init function (vg_*_options_init), which sets struct_size
    to the library's own sizeof. Where that is not this mirror's size, the library and the
    package are different versions, and the library would read or write past the mirror:
    VgError (VG_ERR_ABI) instead. versioned: the library takes a struct of any size from 8 bytes
    (vg_runtime_options, whose members it reads as far as struct_size reaches): the smaller of
    the two sizes is passed, the members beyond it left at zero."""
    from ._errors import ERR_ABI, raise_python
    scratch = ctypes.create_string_buffer(_INIT_SCRATCH)
    init(ctypes.cast(scratch, init.argtypes[0] if init.argtypes else POINTER(cls)))
    size, mine = c_uint32.from_buffer(scratch).value, ctypes.sizeof(cls)
    if versioned and size >= 8:
        o = cls.from_buffer_copy(scratch.raw[:mine])
        o.struct_size = min(size, mine)
        return o
    if size != mine:
        raise_python(ERR_ABI, f"{cls.__name__}: the library's struct is {size} bytes, this package's mirror "
                              f"{mine}: the vg library and the vgraph package are different versions")
    return cls.from_buffer_copy(scratch.raw[:mine])
