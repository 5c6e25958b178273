// SPDX-License-Identifier: Apache-2.0
/* kunlun_stub: device-side loops (ABI 1.4, VG_CAP_GRAPH_LOOP) and lm_advance (op table version 7).
 *
 * A loop is captured like any graph, and its command list ends with a "loop back" command: the
 * exec (stub_exec_launch) runs the list, then runs it again from the start while the flag is
 * set, all inside one launch, as CUDA's WHILE node does on the GPU. VG_STUB_CAPS=noloop turns
 * the capability off, so callers' host-loop fallbacks can be tested. */
#include <stdio.h>
#include <string.h>

#include "stub_internal.h"

typedef struct loop_back_args {
    const int32_t *flag;
} loop_back_args;

/* Does nothing itself: stub_next_cmd recognises the command by this address and jumps. */
static void run_loop_back(vg_bk_stream *s, const void *p)
{
    (void)s;
    (void)p;
}

size_t stub_next_cmd(const stub_cmd *cmds, size_t i)
{
    if (cmds[i].run != run_loop_back) return i + 1;
    const loop_back_args *a = (const void *)cmds[i].args;
    return *a->flag ? 0 : i + 1;
}

vg_status stub_loop_capture_begin(vg_bk_device *dev, vg_bk_stream *s, const int32_t *flag)
{
    if (!dev || !s || !flag) return STUB_ERR(VG_ERR_INVALID_ARG, "kunlun_stub: loop_capture_begin: NULL");
    if (!(dev->cfg.caps & VG_CAP_GRAPH_LOOP))
        return STUB_ERR(VG_ERR_UNSUPPORTED, "kunlun_stub: device-side loops are disabled (VG_STUB_CAPS)");
    if (!stub_is_live(dev, flag, sizeof *flag))
        return STUB_ERR(VG_ERR_INVALID_ARG, "kunlun_stub: loop_capture_begin: the flag %p is not "
                                            "device memory", (const void *)flag);
    vg_status st = stub_capture_begin(dev, s);
    if (st == VG_OK) s->loop_flag = flag;
    return st;
}

vg_status stub_loop_capture_end(vg_bk_device *dev, vg_bk_stream *s, vg_bk_graph **out)
{
    if (!dev || !s || !out) return STUB_ERR(VG_ERR_INVALID_ARG, "kunlun_stub: loop_capture_end: NULL");
    const int32_t *flag = s->loop_flag;
    s->loop_flag = NULL;
    if (s->capture == STUB_CAPTURE_ACTIVE && flag) {
        stub_cmd c = {.run = run_loop_back, .op = STUB_NOT_AN_OP, .name = "loop_back"};
        loop_back_args a = {flag};
        memcpy(c.args, &a, sizeof a);
        if (stub_cmd_list_push(&s->recording, &c) != VG_OK)
            stub_capture_invalidate(s, "out of memory for the loop");
    } else {
        stub_capture_invalidate(s, "loop_capture_end on a capture that loop_capture_begin did "
                                   "not begin");
    }
    return stub_capture_end(dev, s, out); /* ends the capture in every case */
}

/* ---- lm_advance ------------------------------------------------------------------------------- */

static int is_eos(const vg_lm_advance_args *a, int32_t t)
{
    for (int k = 0; k < a->num_eos; k++)
        if (a->eos[k] == t) return 1;
    return 0;
}

static void run_lm_advance(vg_bk_stream *s, const void *p)
{
    (void)s;
    const vg_lm_advance_args *a = p;
    int32_t *done = a->state + 2, *count = a->state + 2 + a->rows;
    int more = 0;
    for (int32_t r = 0; r < a->rows; r++) {
        if (done[r]) continue;
        int32_t t = a->next[r], c = count[r];
        if (c < 0 || c >= a->ld_out) { /* a malformed count: stop the row, write nothing */
            done[r] = 1;
            continue;
        }
        a->out[(int64_t)r * a->ld_out + c] = t;
        if (a->logits_out)
            memcpy(a->logits_out + ((int64_t)r * a->ld_out + c) * a->vocab,
                   a->logits + (int64_t)r * a->vocab, (size_t)a->vocab * sizeof(float));
        count[r] = ++c;
        int32_t pos = a->pos[r] + 1;
        int64_t blk = pos / a->block_size;
        if (is_eos(a, t) || c >= a->limit[r] || c >= a->ld_out || pos < 0 || blk >= a->max_blocks) {
            done[r] = 1;
            continue;
        }
        a->tokens[r] = t;
        a->pos[r] = pos;
        a->ctx[r] += 1;
        a->slots[r] = a->block_tables[(int64_t)r * a->max_blocks + blk] * a->block_size +
                      pos % a->block_size;
        more = 1;
    }
    a->state[0] += 1;
    a->state[1] = more;
}

vg_status stub_op_lm_advance(vg_bk_device *dev, vg_bk_stream *s, const vg_lm_advance_args *a)
{
    (void)dev;
    _Static_assert(sizeof *a <= STUB_CMD_ARGS, "lm_advance's arguments fit a command");
    return stub_submit(s, VG_OP_LM_ADVANCE, "lm_advance", run_lm_advance, a, sizeof *a);
}
