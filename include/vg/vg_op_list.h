/* SPDX-License-Identifier: Apache-2.0 */
/* vg: the one list of ops. Each row is X(ID, value, name, member, dtypes):
 *   ID      the suffix of the op's id, VG_OP_<ID>
 *   value   its number: part of the plugin ABI, so rows are only appended
 *   name    the printable name (vg_op_name, the backends' VG_*_CAPS / VG_*_OPS settings)
 *   member  the vg_op_table member that implements it (an option of another op names that op's
 *           member: the gemm variants)
 *   dtypes  the dtypes the catalogue allows (VG_DTYPE_BIT masks)
 * The enum vg_op_id, the core's name and dtype tables and its op -> member map are generated
 * from it, and so are the backends' name tables. Adding an op: a row here, the member in
 * vg_op_table (vg_backend.h), the checked wrapper (vg_device.h, core/ops*.c), the backends
 * that implement it, and its test (docs/plugin-abi.md, "Adding an op"). */
#ifndef VG_OP_LIST_H
#define VG_OP_LIST_H

/* (the dtype masks are vg_ops.h's; rows expand where that header is included) */
#define VG_OP_LIST(X)                                                                  \
    X(FILL, 0, fill, fill, VG_DTYPES_ALL)                                             \
    X(AXPBY, 1, axpby, axpby, VG_DTYPE_BIT(VG_DTYPE_F32))                                          \
    X(GEMM, 2, gemm, gemm, VG_DTYPES_FLOAT)                                           \
    X(GATHER_ROWS, 3, gather_rows, gather_rows, VG_DTYPES_ALL)                        \
    /* op table version 2 */                                                           \
    X(RMSNORM, 4, rmsnorm, rmsnorm, VG_DTYPES_FLOAT)                                  \
    X(ROTARY_2D, 5, rotary_2d, rotary_2d, VG_DTYPES_FLOAT)                            \
    X(ATTENTION, 6, attention, attention, VG_DTYPES_FLOAT)                            \
    X(SILU_MUL, 7, silu_mul, silu_mul, VG_DTYPES_FLOAT)                               \
    X(CONVERT, 8, convert, convert, VG_DTYPES_FLOAT)                                  \
    /* op table version 3 */                                                           \
    X(ATTENTION_ROTARY, 9, attention_rotary, attention_rotary, VG_DTYPES_FLOAT)       \
    /* op table version 4: decoder language models with a paged KV cache */           \
    X(ROTARY, 10, rotary, rotary, VG_DTYPES_FLOAT)                                    \
    X(RMSNORM_HEADS, 11, rmsnorm_heads, rmsnorm_heads, VG_DTYPES_FLOAT)               \
    X(KV_STORE, 12, kv_store, kv_store, VG_DTYPES_FLOAT)                              \
    X(PAGED_ATTENTION, 13, paged_attention, paged_attention, VG_DTYPES_FLOAT)         \
    X(ARGMAX, 14, argmax, argmax, VG_DTYPES_FLOAT)                                    \
    /* op table version 5: LayerNorm, rows resampled from a table by weighted taps */  \
    X(LAYERNORM, 15, layernorm, layernorm, VG_DTYPES_FLOAT)                           \
    X(GATHER_WEIGHTED, 16, gather_weighted, gather_weighted, VG_DTYPES_FLOAT)         \
    /* op table version 6: fewer kernels per decode step */                            \
    X(ROTARY_KV_STORE, 17, rotary_kv_store, rotary_kv_store, VG_DTYPES_FLOAT)         \
    X(GEMM_SILU_GATE, 18, gemm_silu_gate, gemm, VG_DTYPES_FLOAT) /* args.gate */      \
    X(GEMM_RMSNORM_A, 19, gemm_rmsnorm_a, gemm, VG_DTYPES_FLOAT) /* args.norm_w */    \
    /* op table version 7: one step of a generation loop on the device */              \
    X(LM_ADVANCE, 20, lm_advance, lm_advance, VG_DTYPE_BIT(VG_DTYPE_I32))             \
    /* op table version 8: the new tokens' rotary and store inside paged attention */   \
    X(ROTARY_PAGED_ATTENTION, 21, rotary_paged_attention, rotary_paged_attention, VG_DTYPES_FLOAT) \
    /* op table version 9: the rmsnorm of A without a weight (folded into B) */            \
    X(GEMM_RMSNORM_A_UNIT, 22, gemm_rmsnorm_a_unit, gemm, VG_DTYPES_FLOAT) /* args.norm_unit */ \
    /* op table version 10: the rmsnorm before qkv folded into it, its 1/rms in the attention */ \
    X(ROTARY_PAGED_ATTENTION_NORM_X, 23, rotary_paged_attention_norm_x, rotary_paged_attention, \
      VG_DTYPES_FLOAT) /* args.norm_x */

/* Helpers for generated tables: the op's printable name, as a string, at its value. */
#define VG_OP_LIST_NAME_AT(ID, value, name, member, dtypes) [value] = #name,

#endif /* VG_OP_LIST_H */
