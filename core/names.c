/* SPDX-License-Identifier: Apache-2.0 */
/* Printable names of ops, capability bits and dtypes, and the dtypes each op of the catalogue
 * allows. */
#include "vg_internal.h"

const char *vg_op_name(vg_op_id op)
{
    static const char *const names[VG_OP_COUNT_] = {"fill",      "axpby",     "gemm",
                                                    "gather_rows", "rmsnorm", "rotary_2d",
                                                    "attention", "silu_mul",  "convert",
                                                    "attention_rotary", "rotary",
                                                    "rmsnorm_heads", "kv_store",
                                                    "paged_attention", "argmax",
                                                    "layernorm", "gather_weighted",
                                                    "rotary_kv_store", "gemm_silu_gate",
                                                    "gemm_rmsnorm_a", "lm_advance"};
    return (unsigned)op < VG_OP_COUNT_ ? names[op] : NULL;
}

const char *vg_cap_name(uint64_t cap)
{
    if (cap == VG_CAP_GRAPH) return "graph";
    if (cap == VG_CAP_GRAPH_UPDATE) return "graph_update";
    if (cap == VG_CAP_IPC) return "ipc";
    if (cap == VG_CAP_PINNED_HOST) return "pinned_host";
    if (cap == VG_CAP_GRAPH_LOOP) return "graph_loop";
    if (cap == VG_CAP_COMM) return "comm";
    if (cap == VG_CAP_COMM_CAPTURE) return "comm_capture";
    return NULL;
}

const char *vg_dtype_name(vg_dtype t)
{
    static const char *const names[VG_DTYPE_COUNT_] = {"F32", "F16", "BF16", "I32", "I64", "U8"};
    return (unsigned)t < VG_DTYPE_COUNT_ ? names[t] : NULL;
}

size_t vg_dtype_size(vg_dtype t)
{
    static const size_t sizes[VG_DTYPE_COUNT_] = {4, 2, 2, 4, 8, 1};
    return (unsigned)t < VG_DTYPE_COUNT_ ? sizes[t] : 0;
}

uint32_t vg_op_catalogue_dtypes(uint32_t op)
{
    const uint32_t every = (1u << VG_DTYPE_COUNT_) - 1u;
    switch (op) {
    case VG_OP_FILL:
    case VG_OP_GATHER_ROWS: return every;
    case VG_OP_AXPBY: return VG_DTYPE_BIT(VG_DTYPE_F32);
    case VG_OP_GEMM:
    case VG_OP_GEMM_SILU_GATE:
    case VG_OP_GEMM_RMSNORM_A:
    case VG_OP_RMSNORM:
    case VG_OP_ROTARY_2D:
    case VG_OP_ATTENTION:
    case VG_OP_SILU_MUL:
    case VG_OP_CONVERT:
    case VG_OP_ATTENTION_ROTARY:
    case VG_OP_ROTARY:
    case VG_OP_RMSNORM_HEADS:
    case VG_OP_KV_STORE:
    case VG_OP_PAGED_ATTENTION:
    case VG_OP_ARGMAX:
    case VG_OP_LAYERNORM:
    case VG_OP_GATHER_WEIGHTED:
    case VG_OP_ROTARY_KV_STORE: return VG_DTYPES_FLOAT;
    case VG_OP_LM_ADVANCE: return VG_DTYPE_BIT(VG_DTYPE_I32);
    default: return 0;
    }
}
