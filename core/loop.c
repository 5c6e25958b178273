// SPDX-License-Identifier: Apache-2.0
/* Device-side loops (VG_CAP_GRAPH_LOOP, ABI 1.4): the loop capture of vg_device.h and the op that
 * steps a generation loop (lm_advance, op table version 7). Same pattern as device.c and the
 * ops: every check once, then one call into the plugin. */
#include "op_check.h"

vg_status vg_graph_loop_capture_begin(vg_stream *s, const int32_t *flag)
{
    REQUIRE(s, "vg_graph_loop_capture_begin: stream is NULL");
    REQUIRE(flag, "vg_graph_loop_capture_begin: flag is NULL");
    REQUIRE_ALIGNED("vg_graph_loop_capture_begin", "flag", flag, 4);
    if (!(s->rt->info.caps & VG_CAP_GRAPH_LOOP))
        return vg_error_set(VG_ERR_UNSUPPORTED, "vg_graph_loop_capture_begin: backend '%s' (device "
                                                "%s) has no device-side loops", s->rt->iface.name,
                            s->rt->info.name);
    vg_status st = vg_capture_may_begin(s, "vg_graph_loop_capture_begin");
    if (st != VG_OK) return st;
    st = s->rt->iface.loop_capture_begin(s->rt->dev, s->bk, flag);
    if (st == VG_OK) vg_stream_capture_started(s, VG_CAPTURING_LOOP);
    return st;
}

vg_status vg_graph_loop_capture_end(vg_stream *s, vg_graph **out)
{
    REQUIRE(out, "vg_graph_loop_capture_end: out is NULL");
    *out = NULL;
    REQUIRE(s, "vg_graph_loop_capture_end: stream is NULL");
    if (s->capturing != VG_CAPTURING_LOOP)
        return vg_error_set(VG_ERR_STATE, "vg_graph_loop_capture_end: the stream is not capturing "
                                          "a loop");
    return vg_graph_capture_end(s, out); /* ends either kind through the right member */
}

vg_status vg_op_lm_advance(vg_stream *s, const vg_lm_advance_args *args)
{
    REQUIRE_STREAM("lm_advance", s);
    REQUIRE(args, "lm_advance: args is NULL");
    REQUIRE(args->struct_size >= VG_LM_ADVANCE_ARGS_SIZE_7, "lm_advance: args.struct_size %u < %zu",
            args->struct_size, (size_t)VG_LM_ADVANCE_ARGS_SIZE_7);
    vg_lm_advance_args full;
    op_args_whole(&full, sizeof full, args);
    const vg_lm_advance_args *a = &full;
    REQUIRE_RANGE("lm_advance", "rows", a->rows, 1, OP_INT_MAX);
    REQUIRE_RANGE("lm_advance", "ld_out", a->ld_out, 1, OP_INT_MAX);
    REQUIRE_RANGE("lm_advance", "num_eos", a->num_eos, 0, OP_INT_MAX);
    REQUIRE_RANGE("lm_advance", "block_size", a->block_size, 1, OP_INT_MAX);
    REQUIRE_RANGE("lm_advance", "max_blocks", a->max_blocks, 1, OP_INT_MAX);
    REQUIRE(a->next && a->limit && a->block_tables && a->tokens && a->pos && a->slots && a->ctx &&
                a->state && a->out,
            "lm_advance: a device array (next, limit, block_tables, tokens, pos, slots, ctx, "
            "state, out) is NULL");
    REQUIRE_PTR("lm_advance", "eos", a->eos, a->num_eos);
    if (a->logits_out) {
        REQUIRE(a->logits, "lm_advance: logits_out without logits");
        REQUIRE_RANGE("lm_advance", "vocab", a->vocab, 1, OP_INT_MAX);
        REQUIRE_ALIGNED("lm_advance", "logits", a->logits, 4);
        REQUIRE_ALIGNED("lm_advance", "logits_out", a->logits_out, 4);
    }
    const void *i32[] = {a->next, a->eos, a->limit, a->block_tables, a->tokens, a->pos,
                         a->slots, a->ctx, a->state, a->out};
    for (size_t i = 0; i < VG_ARRAY_LEN(i32); i++)
        REQUIRE_ALIGNED("lm_advance", "an I32 array", i32[i], 4);
    OP_GATE(s, VG_OP_LM_ADVANCE, VG_DTYPE_BIT(VG_DTYPE_I32));
    return OP_CALL(s, lm_advance, a);
}
