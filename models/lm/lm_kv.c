/* SPDX-License-Identifier: Apache-2.0 */
/* The host side of the paged KV cache: the pool of blocks, the sequences and their block
 * tables, and the planning of a step (validation, block allocation, slot mapping, positions,
 * query starts, context lengths) into the int32 metadata the pieces read from a runner buffer.
 * No device code: every decision about a step is made here, before the device sees it. */
#include <stdlib.h>
#include <string.h>

#include "lm_internal.h"

vg_status lm_kv_init(lm_kv *kv, int64_t num_blocks, int block_size, int max_blocks, int max_seqs)
{
    memset(kv, 0, sizeof *kv);
    if (num_blocks < 1 || num_blocks > INT32_MAX || block_size < 1 || max_blocks < 1 || max_seqs < 1 ||
        num_blocks * (int64_t)block_size > INT32_MAX)
        return vg_error_set(VG_ERR_INVALID_ARG, "lm: KV pool of %lld blocks of %d tokens, %d blocks "
                                                "per sequence, %d sequences: out of range",
                            (long long)num_blocks, block_size, max_blocks, max_seqs);
    kv->num_blocks = num_blocks, kv->block_size = block_size, kv->max_blocks = max_blocks;
    kv->max_seqs = max_seqs;
    kv->free_list = malloc((size_t)num_blocks * sizeof(int32_t));
    kv->seqs = calloc((size_t)max_seqs, sizeof(lm_seq));
    kv->tables = malloc((size_t)max_seqs * (size_t)max_blocks * sizeof(int32_t));
    if (!kv->free_list || !kv->seqs || !kv->tables) {
        lm_kv_free(kv);
        return vg_error_set(VG_ERR_OUT_OF_MEMORY, "lm: out of host memory for the KV tables");
    }
    /* a stack popped from the end: blocks are handed out in ascending order from a fresh pool */
    for (int64_t i = 0; i < num_blocks; i++) kv->free_list[i] = (int32_t)(num_blocks - 1 - i);
    kv->nfree = num_blocks;
    for (int s = 0; s < max_seqs; s++) kv->seqs[s].table = kv->tables + (size_t)s * (size_t)max_blocks;
    return VG_OK;
}

void lm_kv_free(lm_kv *kv)
{
    free(kv->free_list);
    free(kv->seqs);
    free(kv->tables);
    memset(kv, 0, sizeof *kv);
}

vg_status lm_kv_seq_add(lm_kv *kv, int32_t *seq)
{
    for (int s = 0; s < kv->max_seqs; s++)
        if (!kv->seqs[s].alive) {
            kv->seqs[s].alive = 1;
            kv->seqs[s].len = 0;
            kv->seqs[s].nblocks = 0;
            kv->live++;
            *seq = s;
            return VG_OK;
        }
    return vg_error_set(VG_ERR_OUT_OF_MEMORY, "lm: %d sequences are alive already (max_seqs)",
                        kv->max_seqs);
}

static int seq_ok(const lm_kv *kv, int32_t seq)
{
    return seq >= 0 && seq < kv->max_seqs && kv->seqs[seq].alive;
}

vg_status lm_kv_seq_free(lm_kv *kv, int32_t seq)
{
    if (!seq_ok(kv, seq))
        return vg_error_set(VG_ERR_INVALID_ARG, "lm: sequence %d is not alive", (int)seq);
    lm_seq *q = &kv->seqs[seq];
    for (int b = q->nblocks - 1; b >= 0; b--) kv->free_list[kv->nfree++] = q->table[b];
    q->alive = 0, q->len = 0, q->nblocks = 0;
    kv->live--;
    return VG_OK;
}

void lm_plan_free(lm_plan *p)
{
    free(p->tokens);
    free(p->seq_ids);
    free(p->old_len);
    free(p->old_nblocks);
    memset(p, 0, sizeof *p);
}

/* Grow the plan's arrays (host memory, amortised: steady decoding allocates nothing). */
static vg_status plan_reserve(lm_plan *p, size_t tokens, size_t seqs)
{
    if (tokens > p->cap_tokens) {
        size_t cap = tokens + tokens / 2;
        int32_t *t = malloc(3 * cap * sizeof(int32_t));
        if (!t) return vg_error_set(VG_ERR_OUT_OF_MEMORY, "lm: out of host memory");
        free(p->tokens);
        p->tokens = t, p->pos = t + cap, p->slots = t + 2 * cap, p->cap_tokens = cap;
    }
    if (seqs > p->cap_seqs) {
        size_t cap = seqs + seqs / 2;
        int32_t *t = malloc((4 * cap + 1) * sizeof(int32_t));
        int64_t *ol = malloc(cap * sizeof(int64_t));
        int *ob = malloc(cap * sizeof(int));
        if (!t || !ol || !ob) {
            free(t), free(ol), free(ob);
            return vg_error_set(VG_ERR_OUT_OF_MEMORY, "lm: out of host memory");
        }
        free(p->seq_ids), free(p->old_len), free(p->old_nblocks);
        p->seq_ids = t, p->ctx = t + cap, p->last = t + 2 * cap, p->qstart = t + 3 * cap;
        p->old_len = ol, p->old_nblocks = ob, p->cap_seqs = cap;
    }
    return VG_OK;
}

vg_status lm_plan_step(lm_kv *kv, const vg_lm_seq_tokens *seqs, int num, int vocab,
                       int64_t max_pos, lm_plan *p)
{
    if (num < 1 || !seqs) return vg_error_set(VG_ERR_INVALID_ARG, "lm: empty step (no sequences)");
    if (num > kv->max_seqs)
        return vg_error_set(VG_ERR_INVALID_ARG, "lm: a step of %d sequences (max_seqs %d)", num,
                            kv->max_seqs);
    int64_t total = 0, need_blocks = 0;
    int uniform = 1;
    /* everything is checked before anything changes */
    for (int i = 0; i < num; i++) {
        const vg_lm_seq_tokens *e = &seqs[i];
        if (!seq_ok(kv, e->seq))
            return vg_error_set(VG_ERR_INVALID_ARG, "lm: step entry %d names sequence %d, which is "
                                                    "not alive (never added, or freed)", i, (int)e->seq);
        for (int j = 0; j < i; j++)
            if (seqs[j].seq == e->seq)
                return vg_error_set(VG_ERR_INVALID_ARG, "lm: sequence %d appears twice in one step",
                                    (int)e->seq);
        if (e->num_tokens < 1 || !e->tokens)
            return vg_error_set(VG_ERR_INVALID_ARG, "lm: step entry %d (sequence %d) has no tokens",
                                i, (int)e->seq);
        for (int32_t t = 0; t < e->num_tokens; t++)
            if (e->tokens[t] < 0 || e->tokens[t] >= vocab)
                return vg_error_set(VG_ERR_INVALID_ARG, "lm: sequence %d: token %d is %d, outside "
                                                        "the vocabulary [0, %d)", (int)e->seq, (int)t,
                                    (int)e->tokens[t], vocab);
        const lm_seq *q = &kv->seqs[e->seq];
        int64_t end = q->len + e->num_tokens;
        if (end > max_pos)
            return vg_error_set(VG_ERR_INVALID_ARG, "lm: sequence %d would reach position %lld, "
                                                    "beyond max_position_embeddings %lld",
                                (int)e->seq, (long long)end - 1, (long long)max_pos);
        int64_t blocks = (end + kv->block_size - 1) / kv->block_size;
        if (blocks > kv->max_blocks)
            return vg_error_set(VG_ERR_INVALID_ARG, "lm: sequence %d would need %lld KV blocks, more "
                                                    "than the %d a sequence may hold", (int)e->seq,
                                (long long)blocks, kv->max_blocks);
        if (blocks > q->nblocks) need_blocks += blocks - q->nblocks;
        total += e->num_tokens;
        if (e->num_tokens != 1) uniform = 0;
    }
    if (total > INT32_MAX)
        return vg_error_set(VG_ERR_INVALID_ARG, "lm: a step of %lld tokens", (long long)total);
    if (need_blocks > kv->nfree)
        return vg_error_set(VG_ERR_OUT_OF_MEMORY, "lm: the KV pool is exhausted: the step needs %lld "
                                                  "more blocks, %lld of %lld are free (the step is "
                                                  "refused whole)", (long long)need_blocks,
                            (long long)kv->nfree, (long long)kv->num_blocks);
    VGM_TRY(plan_reserve(p, (size_t)total, (size_t)num));
    /* commit the blocks, then map every new token to its slot */
    p->num_tokens = total, p->num_seqs = num, p->uniform = uniform;
    int64_t row = 0;
    for (int i = 0; i < num; i++) {
        const vg_lm_seq_tokens *e = &seqs[i];
        lm_seq *q = &kv->seqs[e->seq];
        p->old_len[i] = q->len, p->old_nblocks[i] = q->nblocks;
        int64_t end = q->len + e->num_tokens;
        while ((int64_t)q->nblocks * kv->block_size < end) q->table[q->nblocks++] = kv->free_list[--kv->nfree];
        p->seq_ids[i] = e->seq;
        p->qstart[i] = (int32_t)row;
        p->ctx[i] = (int32_t)end;
        for (int32_t t = 0; t < e->num_tokens; t++, row++) {
            int64_t pos = q->len + t;
            p->tokens[row] = e->tokens[t];
            p->pos[row] = (int32_t)pos;
            p->slots[row] = q->table[pos / kv->block_size] * kv->block_size + (int32_t)(pos % kv->block_size);
        }
        p->last[i] = (int32_t)(row - 1);
    }
    p->qstart[num] = (int32_t)row;
    return VG_OK;
}

void lm_plan_rollback(lm_kv *kv, const lm_plan *p)
{
    for (int i = p->num_seqs - 1; i >= 0; i--) {
        lm_seq *q = &kv->seqs[p->seq_ids[i]];
        while (q->nblocks > p->old_nblocks[i]) kv->free_list[kv->nfree++] = q->table[--q->nblocks];
        q->len = p->old_len[i];
    }
}

void lm_plan_commit(lm_kv *kv, const lm_plan *p)
{
    for (int i = 0; i < p->num_seqs; i++) kv->seqs[p->seq_ids[i]].len = p->ctx[i];
}

void lm_meta_layout_for(int64_t padded_tokens, int max_seqs, int max_blocks, int head_parts,
                        lm_meta_layout *l)
{
    memset(l, 0, sizeof *l);
    int64_t T = padded_tokens;
    int S = T < max_seqs ? (int)T : max_seqs;
    l->tokens = T, l->seqs = S, l->max_blocks = max_blocks;
    size_t o = 0;
    l->tok = o, o += (size_t)T;
    l->pos = o, o += (size_t)T;
    l->slots = o, o += (size_t)T;
    l->last = o, o += (size_t)S;
    l->qstart = o, o += (size_t)S + 1;
    l->ctx = o, o += (size_t)S;
    l->head_idx = o, o += head_parts > 1 ? (size_t)S * (size_t)head_parts : 0;
    o = (o + 3) & ~(size_t)3; /* 16-byte aligned block tables */
    l->btab = o, o += (size_t)S * (size_t)max_blocks;
    l->total = o;
}

size_t lm_meta_fill(const lm_kv *kv, const lm_plan *p, const lm_meta_layout *l, int32_t *meta)
{
    int64_t T = p ? p->num_tokens : 0;
    int R = p ? p->num_seqs : 0;
    int32_t *tok = meta + l->tok, *pos = meta + l->pos, *slots = meta + l->slots;
    int32_t *last = meta + l->last, *qs = meta + l->qstart, *ctx = meta + l->ctx;
    int32_t *bt = meta + l->btab;
    if (T) {
        memcpy(tok, p->tokens, (size_t)T * sizeof(int32_t));
        memcpy(pos, p->pos, (size_t)T * sizeof(int32_t));
        memcpy(slots, p->slots, (size_t)T * sizeof(int32_t));
    }
    for (int64_t r = T; r < l->tokens; r++) tok[r] = 0, pos[r] = 0, slots[r] = -1;
    for (int s = 0; s < l->seqs; s++) {
        last[s] = s < R ? p->last[s] : 0;
        qs[s] = s < R ? p->qstart[s] : (int32_t)T;
        ctx[s] = s < R ? p->ctx[s] : 0;
    }
    qs[l->seqs] = (int32_t)T;
    for (int s = 0; s < R; s++) {
        const lm_seq *q = &kv->seqs[p->seq_ids[s]];
        int32_t *row = bt + (size_t)s * (size_t)l->max_blocks;
        memcpy(row, q->table, (size_t)q->nblocks * sizeof(int32_t));
        /* entries past the sequence's blocks are never read; keep them valid anyway */
        for (int b = q->nblocks; b < l->max_blocks; b++) row[b] = 0;
    }
    return l->btab + (size_t)R * (size_t)l->max_blocks;
}
