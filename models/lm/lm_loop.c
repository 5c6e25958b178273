// SPDX-License-Identifier: Apache-2.0
/* Greedy generation: many decode steps in one call (vg_lm_generate).
 *
 * Both loops run the same steps: a uniform step over every sequence of the call, where a
 * finished sequence repeats its last step (same token, position and slot: it rewrites the KV
 * entries it wrote before, with the same values) so the shape never changes. After a step each
 * unfinished sequence takes its argmax, which is appended and fed to the next step, and finishes
 * at an EOS id or its limit.
 *
 *   device loop  the bucket's whole forward plus lm_advance (which does the above on the device
 *                and writes the next step's tokens, positions, slots and context lengths into
 *                the runner's metadata buffer) are the body of a graph that loops on the device
 *                (vg_runner_loop_capture); one launch, one read-back. Captured once per bucket
 *                and kept (struct lm_loops).
 *   host loop    vg_runner_run per step, the argmax read back, the same decisions on the host.
 *
 * KV blocks for every step are taken before the first, so the device never needs the host;
 * afterwards each sequence keeps the blocks its length needs. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lm_internal.h"

#define LOOP_CACHE 8   /* captured loops kept per model: buckets × output widths in use */
#define LD_OUT_STEP 64 /* a loop's output row width is N rounded up to this */

typedef struct lm_loop {
    int used;
    int64_t padded;          /* the bucket's token count */
    int64_t ld_out;          /* output row width: N rounded up */
    int num_eos, logits;     /* the rest of the key */
    vg_graph_exec *exec;
    void *dev;               /* [state | limit | eos | out] I32, then logits_out F32 */
    int32_t *host;           /* pinned staging of the I32 part */
    size_t i32_count, out_at, logits_bytes;
    const void *bufs[LB_COUNT_]; /* the runner buffers the body was captured with */
    uint64_t last_use;
    char failed[256];        /* exec NULL: why this key cannot loop (not tried again) */
} lm_loop;

struct lm_loops {
    lm_loop e[LOOP_CACHE];
    uint64_t tick;
};

void vg_lm_generate_options_init(vg_lm_generate_options *o)
{
    if (!o) return;
    memset(o, 0, sizeof *o);
    o->struct_size = sizeof *o;
    o->max_new_tokens = 16;
    o->loop = VG_LM_LOOP_AUTO;
}

static void loop_drop(vg_lm *m, lm_loop *e)
{
    vg_graph_exec_destroy(e->exec);
    if (e->dev) vg_mem_free(m->rt, e->dev);
    if (e->host) vg_host_free(m->rt, e->host);
    memset(e, 0, sizeof *e);
}

void lm_loops_free(vg_lm *m)
{
    if (!m->loops) return;
    if (m->runner) vg_stream_sync(vg_runner_stream(m->runner));
    for (int i = 0; i < LOOP_CACHE; i++) loop_drop(m, &m->loops->e[i]);
    free(m->loops);
    m->loops = NULL;
}

/* Offsets (I32 elements) of a loop's device block for S sequence slots. */
static size_t at_limit(int S) { return 2 + 2 * (size_t)S; }
static size_t at_eos(int S) { return 2 + 3 * (size_t)S; }

/* ---- the loop body's tail: lm_advance over the runner's metadata ----------------------------- */

typedef struct tail_ctx {
    vg_lm *m;
    lm_loop *e;
} tail_ctx;

static vg_status loop_tail(void *user, vg_runner *r, const vg_batch_desc *padded, vg_stream *s)
{
    const tail_ctx *c = user;
    const vg_lm *m = c->m;
    const lm_loop *e = c->e;
    lm_meta_layout l;
    lm_meta_layout_of(m, padded->num_tokens, &l);
    int32_t *meta = vg_runner_buffer(r, LB_META), *d = e->dev;
    /* uniform steps: token row i is sequence slot i, and logits row i is its logits */
    vg_lm_advance_args a = {
        .struct_size = sizeof a, .rows = l.seqs, .num_eos = e->num_eos,
        .block_size = m->kv.block_size, .max_blocks = l.max_blocks, .ld_out = e->ld_out,
        .vocab = m->cfg.vocab, .next = vg_runner_buffer(r, LB_ARGMAX), .eos = d + at_eos(l.seqs),
        .limit = d + at_limit(l.seqs), .block_tables = meta + l.btab, .tokens = meta + l.tok,
        .pos = meta + l.pos, .slots = meta + l.slots, .ctx = meta + l.ctx, .state = d,
        .out = d + e->out_at,
        .logits = e->logits ? vg_runner_buffer(r, LB_LOGITS) : NULL,
        .logits_out = e->logits ? (float *)((char *)e->dev + e->i32_count * sizeof(int32_t)) : NULL};
    return vg_op_lm_advance(s, &a);
}

/* The captured loop for this call's key, capturing it if needed; NULL with the reason set. */
static lm_loop *loop_get(vg_lm *m, int64_t padded, int64_t ld_out, int num_eos, int logits)
{
    if (!m->loops && !(m->loops = calloc(1, sizeof *m->loops))) {
        vg_error_set(VG_ERR_OUT_OF_MEMORY, "lm: out of memory");
        return NULL;
    }
    struct lm_loops *c = m->loops;
    lm_loop *e = NULL;
    for (int i = 0; i < LOOP_CACHE; i++) {
        lm_loop *x = &c->e[i];
        if (x->used && x->padded == padded && x->ld_out == ld_out && x->num_eos == num_eos &&
            x->logits == logits) {
            x->last_use = ++c->tick;
            if (x->exec) return x;
            vg_error_set(VG_ERR_UNSUPPORTED, "%s", x->failed);
            return NULL;
        }
        if (!e || !x->used || (e->used && x->last_use < e->last_use)) e = x; /* free or LRU */
    }
    if (e->used) {
        vg_stream_sync(vg_runner_stream(m->runner));
        loop_drop(m, e);
    }
    int S = lm_seq_slots(m, padded);
    e->padded = padded, e->ld_out = ld_out, e->num_eos = num_eos, e->logits = logits;
    e->out_at = (at_eos(S) + (size_t)num_eos + 3) & ~(size_t)3;
    e->i32_count = e->out_at + (size_t)S * (size_t)ld_out;
    e->logits_bytes = logits ? (size_t)S * (size_t)ld_out * (size_t)m->cfg.vocab * sizeof(float) : 0;
    vg_status st = vg_mem_alloc(m->rt, e->i32_count * sizeof(int32_t) + e->logits_bytes, &e->dev);
    if (st == VG_OK) st = vg_host_alloc(m->rt, e->i32_count * sizeof(int32_t), (void **)&e->host);
    if (st == VG_OK) {
        tail_ctx t = {m, e};
        vg_batch_desc d = {.num_tokens = padded, .uniform = 1};
        st = vg_runner_loop_capture(m->runner, &d, loop_tail, &t, (int32_t *)e->dev + 1, &e->exec);
    }
    if (st != VG_OK) { /* remembered: a capture that failed once fails again */
        char why[sizeof e->failed];
        snprintf(why, sizeof why, "%s", vg_last_error());
        loop_drop(m, e);
        e->used = 1, e->padded = padded, e->ld_out = ld_out, e->num_eos = num_eos;
        e->logits = logits, e->last_use = ++c->tick;
        snprintf(e->failed, sizeof e->failed, "%s", why);
        vg_error_set(st, "%s", why);
        return NULL;
    }
    for (int i = 0; i < LB_COUNT_; i++) e->bufs[i] = vg_runner_buffer(m->runner, i);
    e->used = 1;
    e->last_use = ++c->tick;
    return e;
}

/* ---- one generation ------------------------------------------------------------------------- */

/* A call in progress: the step's sequences (those with a limit of at least one token). */
typedef struct gen {
    vg_lm *m;
    lm_plan *p;          /* the first step, planned; the host loop advances it in place */
    int n;               /* sequences in the steps */
    int *row;            /* [n] their index in the caller's arrays */
    int32_t *limit;      /* [n] tokens each may produce */
    int32_t *count;      /* [n] tokens produced */
    const int32_t *eos;
    int num_eos;
    int64_t N;           /* the caller's row width */
    int32_t *tokens;     /* the caller's [num, N] */
    float *logits;       /* the caller's [num, N, vocab], or NULL */
} gen;

static int is_eos(const gen *g, int32_t t)
{
    for (int k = 0; k < g->num_eos; k++)
        if (g->eos[k] == t) return 1;
    return 0;
}

static int32_t slot_of(const lm_kv *kv, int32_t seq, int64_t pos)
{
    const lm_seq *q = &kv->seqs[seq];
    return q->table[pos / kv->block_size] * kv->block_size + (int32_t)(pos % kv->block_size);
}

static vg_status host_loop(gen *g, vg_lm_generate_info *info)
{
    vg_lm *m = g->m;
    lm_plan *p = g->p;
    size_t V = (size_t)m->cfg.vocab;
    vg_stream *s = vg_runner_stream(m->runner);
    int32_t *next = malloc((size_t)g->n * sizeof *next);
    unsigned char *done = calloc((size_t)g->n, 1);
    if (!next || !done) {
        free(next), free(done);
        return vg_error_set(VG_ERR_OUT_OF_MEMORY, "lm: out of memory");
    }
    vg_batch_desc d = {.num_tokens = g->n, .uniform = 1};
    vg_status st = VG_OK;
    for (int more = 1; more && st == VG_OK;) {
        st = vg_runner_run(m->runner, &d, p, NULL);
        if (st == VG_OK)
            st = vg_mem_copy_d2h(s, next, vg_runner_buffer(m->runner, LB_ARGMAX), (size_t)g->n * sizeof *next);
        for (int j = 0; st == VG_OK && g->logits && j < g->n; j++)
            if (!done[j])
                st = vg_mem_copy_d2h(s, g->logits + ((size_t)g->row[j] * (size_t)g->N + (size_t)g->count[j]) * V,
                                     (const float *)vg_runner_buffer(m->runner, LB_LOGITS) +
                                         (size_t)j * (size_t)lm_logits_ld(m),
                                     V * sizeof(float));
        if (st == VG_OK) st = vg_stream_sync(s);
        if (st != VG_OK) break;
        info->launches++, info->readbacks++, info->steps++;
        more = 0;
        for (int j = 0; j < g->n; j++) { /* what lm_advance does on the device (vg_ops.h) */
            if (done[j]) continue;
            int32_t t = next[j], seq = p->seq_ids[j];
            g->tokens[(size_t)g->row[j] * (size_t)g->N + (size_t)g->count[j]++] = t;
            if (is_eos(g, t) || g->count[j] >= g->limit[j]) {
                done[j] = 1;
                continue;
            }
            p->tokens[j] = t;
            p->pos[j]++;
            p->ctx[j]++;
            p->slots[j] = slot_of(&m->kv, seq, p->pos[j]);
            more = 1;
        }
    }
    free(next);
    free(done);
    return st;
}

static vg_status device_loop(gen *g, lm_loop *e, vg_lm_generate_info *info)
{
    vg_lm *m = g->m;
    vg_runner *r = m->runner;
    vg_stream *s = vg_runner_stream(r);
    vg_batch_desc d = {.num_tokens = g->n, .uniform = 1}, padded;
    VGM_TRY(vg_runner_prepare(r, &d, g->p, &padded));
    for (int i = 0; i < LB_COUNT_; i++)
        if (e->bufs[i] != vg_runner_buffer(r, i)) { /* dropped: the next call captures anew */
            loop_drop(m, e);
            return vg_error_set(VG_ERR_STATE, "lm: runner buffer %d moved since the loop was "
                                              "captured", i);
        }
    int S = lm_seq_slots(m, padded.num_tokens);
    int32_t *h = e->host;
    h[0] = 0, h[1] = 1;
    for (int i = 0; i < S; i++) {
        h[2 + i] = i < g->n ? 0 : 1;    /* done: the padding slots from the start */
        h[2 + S + i] = 0;               /* count */
        h[at_limit(S) + i] = i < g->n ? g->limit[i] : 0;
    }
    for (int k = 0; k < g->num_eos; k++) h[at_eos(S) + k] = g->eos[k];
    size_t V = (size_t)m->cfg.vocab, lo = (size_t)g->n * (size_t)e->ld_out * V;
    float *lstage = NULL;
    if (g->logits && !(lstage = malloc(lo * sizeof(float))))
        return vg_error_set(VG_ERR_OUT_OF_MEMORY, "lm: out of memory");
    vg_status st = vg_mem_copy_h2d(s, e->dev, h, e->out_at * sizeof(int32_t));
    if (st == VG_OK) st = vg_runner_loop_launch(r, e->exec, &d);
    if (st == VG_OK) /* the one read-back: state, counts and every produced token */
        st = vg_mem_copy_d2h(s, h, e->dev, e->i32_count * sizeof(int32_t));
    if (st == VG_OK && lstage)
        st = vg_mem_copy_d2h(s, lstage, (char *)e->dev + e->i32_count * sizeof(int32_t), lo * sizeof(float));
    if (st == VG_OK) st = vg_stream_sync(s);
    if (st == VG_OK) {
        info->launches = 1, info->readbacks = 1, info->steps = h[0];
        for (int j = 0; j < g->n; j++) {
            int32_t c = h[2 + S + j];
            g->count[j] = c < 0 ? 0 : c > g->limit[j] ? g->limit[j] : c;
            memcpy(g->tokens + (size_t)g->row[j] * (size_t)g->N, h + e->out_at + (size_t)j * (size_t)e->ld_out,
                   (size_t)g->count[j] * sizeof(int32_t));
            if (lstage)
                memcpy(g->logits + (size_t)g->row[j] * (size_t)g->N * V, lstage + (size_t)j * (size_t)e->ld_out * V,
                       (size_t)g->count[j] * V * sizeof(float));
        }
    }
    free(lstage);
    return st;
}

/* The captured loop for this call, or NULL with why the host loop runs instead. */
static lm_loop *device_loop_for(gen *g, char *why, size_t n)
{
    vg_lm *m = g->m;
    if (m->tp.size > 1) { /* lm_advance reads logits rows of vocab floats, not the padded ones */
        snprintf(why, n, "tensor parallelism (%d ranks) runs generation as a host loop", m->tp.size);
        return NULL;
    }
    if (!(vg_runtime_caps(m->rt) & VG_CAP_GRAPH_LOOP)) {
        snprintf(why, n, "backend '%s' has no device-side loops", vg_runtime_backend_name(m->rt));
        return NULL;
    }
    if (!(vg_runtime_op_support(m->rt, VG_OP_LM_ADVANCE, NULL) & VG_OP_CAPTURABLE)) {
        snprintf(why, n, "backend '%s' cannot capture lm_advance", vg_runtime_backend_name(m->rt));
        return NULL;
    }
    int b = vg_runner_bucket_for(m->runner, g->n);
    if (vg_runner_mode(m->runner) == VG_MODE_NONE || b < 0) {
        snprintf(why, n, "a step of %d sequences has no graph (mode %s)", g->n,
                 vg_graph_mode_name(vg_runner_mode(m->runner)));
        return NULL;
    }
    int64_t ld = (g->N + LD_OUT_STEP - 1) / LD_OUT_STEP * LD_OUT_STEP;
    lm_loop *e = loop_get(m, vg_runner_bucket_size(m->runner, b), ld, g->num_eos, g->logits != NULL);
    if (!e) snprintf(why, n, "%s", vg_last_error());
    return e;
}

/* Validate the call and plan its first step; the limits and rows of the stepping sequences. */
static vg_status gen_begin(gen *g, const vg_lm_gen_seq *seqs, int num)
{
    vg_lm *m = g->m;
    lm_kv *kv = &m->kv;
    int64_t cap_len = (int64_t)kv->max_blocks * kv->block_size;
    if (cap_len > m->cfg.max_pos) cap_len = m->cfg.max_pos;
    vg_lm_seq_tokens *st = malloc((size_t)num * sizeof *st);
    g->row = malloc((size_t)num * sizeof *g->row);
    g->limit = malloc((size_t)num * sizeof *g->limit);
    g->count = calloc((size_t)num, sizeof *g->count);
    if (!st || !g->row || !g->limit || !g->count) {
        free(st);
        return vg_error_set(VG_ERR_OUT_OF_MEMORY, "lm: out of memory");
    }
    int64_t need = 0;
    g->n = 0;
    for (int i = 0; i < num; i++) {
        int32_t seq = seqs[i].seq;
        if (seq < 0 || seq >= kv->max_seqs || !kv->seqs[seq].alive) {
            free(st);
            return vg_error_set(VG_ERR_INVALID_ARG, "lm: generate: entry %d names sequence %d, "
                                                    "which is not alive", i, (int)seq);
        }
        if (seqs[i].max_new_tokens < 0) {
            free(st);
            return vg_error_set(VG_ERR_INVALID_ARG, "lm: generate: entry %d: max_new_tokens %d < 0",
                                i, (int)seqs[i].max_new_tokens);
        }
        const lm_seq *q = &kv->seqs[seq];
        int64_t lim = g->N;
        if (seqs[i].max_new_tokens > 0 && seqs[i].max_new_tokens < lim) lim = seqs[i].max_new_tokens;
        if (lim > cap_len - q->len) lim = cap_len - q->len > 0 ? cap_len - q->len : 0;
        if (!lim) continue; /* at its length limit already: produces nothing */
        int64_t blocks = (q->len + lim + kv->block_size - 1) / kv->block_size;
        need += blocks > q->nblocks ? blocks - q->nblocks : 0;
        st[g->n] = (vg_lm_seq_tokens){.seq = seq, .tokens = &seqs[i].token, .num_tokens = 1};
        g->row[g->n] = i;
        g->limit[g->n++] = (int32_t)lim;
    }
    vg_status s = VG_OK;
    if (need > kv->nfree)
        s = vg_error_set(VG_ERR_OUT_OF_MEMORY, "lm: generate: the KV pool is exhausted: the "
                                               "generation needs %lld more blocks, %lld of %lld "
                                               "are free (refused whole)", (long long)need,
                         (long long)kv->nfree, (long long)kv->num_blocks);
    /* the first step checks ids, duplicates and tokens, and takes its blocks */
    if (s == VG_OK && g->n) s = lm_plan_step(kv, st, g->n, m->cfg.vocab, m->cfg.max_pos, g->p);
    free(st);
    if (s != VG_OK) g->n = 0; /* refused: nothing was taken, nothing to settle */
    if (s != VG_OK || !g->n) return s;
    for (int j = 0; j < g->n; j++) { /* every later step's blocks, now */
        lm_seq *q = &kv->seqs[g->p->seq_ids[j]];
        while ((int64_t)q->nblocks * kv->block_size < q->len + g->limit[j])
            q->table[q->nblocks++] = kv->free_list[--kv->nfree];
    }
    return VG_OK;
}

/* Each sequence keeps `len` tokens and the blocks they need; the rest go back to the pool. */
static void seq_settle(lm_kv *kv, int32_t seq, int64_t len, int keep_blocks)
{
    lm_seq *q = &kv->seqs[seq];
    q->len = len;
    while (q->nblocks > keep_blocks) kv->free_list[kv->nfree++] = q->table[--q->nblocks];
}

static void gen_end(gen *g, int ok)
{
    lm_kv *kv = &g->m->kv;
    for (int j = g->n - 1; j >= 0; j--) {
        int64_t len = g->p->old_len[j] + (ok ? g->count[j] : 0);
        int keep = ok ? (int)((len + kv->block_size - 1) / kv->block_size) : g->p->old_nblocks[j];
        if (keep < g->p->old_nblocks[j]) keep = g->p->old_nblocks[j];
        seq_settle(kv, g->p->seq_ids[j], len, keep);
    }
}

static vg_status check_args(const vg_lm *m, const vg_lm_gen_seq *seqs, int num,
                            const vg_lm_generate_options *o, const int32_t *tokens,
                            const int32_t *counts)
{
    if (!m || !seqs || !o || !tokens || !counts)
        return vg_error_set(VG_ERR_INVALID_ARG, "vg_lm_generate: NULL argument");
    if (o->struct_size < sizeof *o)
        return vg_error_set(VG_ERR_INVALID_ARG, "vg_lm_generate: options.struct_size not set "
                                                "(call vg_lm_generate_options_init)");
    if (num < 1 || num > m->kv.max_seqs)
        return vg_error_set(VG_ERR_INVALID_ARG, "vg_lm_generate: %d sequences (1 to max_seqs %d)",
                            num, m->kv.max_seqs);
    if (o->max_new_tokens < 1)
        return vg_error_set(VG_ERR_INVALID_ARG, "vg_lm_generate: max_new_tokens %d < 1",
                            (int)o->max_new_tokens);
    if (o->num_eos < 0 || (o->num_eos && !o->eos))
        return vg_error_set(VG_ERR_INVALID_ARG, "vg_lm_generate: %d EOS ids and %s list",
                            (int)o->num_eos, o->eos ? "a" : "no");
    for (int k = 0; k < o->num_eos; k++)
        if (o->eos[k] < 0 || o->eos[k] >= m->cfg.vocab)
            return vg_error_set(VG_ERR_INVALID_ARG, "vg_lm_generate: EOS id %d is outside the "
                                                    "vocabulary [0, %d)", (int)o->eos[k], m->cfg.vocab);
    if ((unsigned)o->loop > VG_LM_LOOP_DEVICE)
        return vg_error_set(VG_ERR_INVALID_ARG, "vg_lm_generate: bad loop %d", (int)o->loop);
    return VG_OK;
}

vg_status vg_lm_generate(vg_lm *m, const vg_lm_gen_seq *seqs, int num,
                         const vg_lm_generate_options *o, int32_t *tokens, int32_t *counts,
                         float *logits, vg_lm_generate_info *info_out)
{
    double t0 = vgm_now_ms();
    vg_lm_generate_info info;
    memset(&info, 0, sizeof info);
    VGM_TRY(check_args(m, seqs, num, o, tokens, counts));
    gen g = {.m = m, .p = &m->plan, .eos = o->eos, .num_eos = o->num_eos, .N = o->max_new_tokens,
             .tokens = tokens, .logits = logits};
    vg_status st = gen_begin(&g, seqs, num);
    if (st == VG_OK && g.n) {
        lm_loop *e = NULL;
        if (o->loop != VG_LM_LOOP_HOST) {
            e = device_loop_for(&g, info.fallback, sizeof info.fallback);
            if (e) {
                st = device_loop(&g, e, &info);
                if (st == VG_OK) info.device_loop = 1;
                else { /* nothing of the call is visible yet: run it on the host instead */
                    memset(&info, 0, sizeof info);
                    snprintf(info.fallback, sizeof info.fallback, "%s", vg_last_error());
                    memset(g.count, 0, (size_t)g.n * sizeof *g.count);
                    st = VG_OK;
                }
            }
            if (!info.device_loop && !m->loop_logged) {
                m->loop_logged = 1;
                vg_log(VG_LOG_WARN, "lm: generation runs its steps as a host loop: %s", info.fallback);
            }
        }
        /* the plan is the host's copy of the first step: a failed device loop left it as is */
        if (st == VG_OK && !info.device_loop) st = host_loop(&g, &info);
    }
    if (g.n) gen_end(&g, st == VG_OK);
    if (st == VG_OK)
        for (int i = 0; i < num; i++) counts[i] = 0;
    for (int j = 0; st == VG_OK && j < g.n; j++) counts[g.row[j]] = g.count[j];
    free(g.row), free(g.limit), free(g.count);
    if (st != VG_OK) return vg_error_prefix("lm: generate: ");
    info.total_ms = vgm_now_ms() - t0;
    if (info_out) *info_out = info;
    return VG_OK;
}
