/* SPDX-License-Identifier: Apache-2.0 */
/* Decoder language models (Qwen2, Qwen3): shared definitions of the files of models/lm.
 * Backend-agnostic: written on the public headers alone.
 *
 *   lm_config.c   config.json, validated
 *   lm_weights.c  the tensors, through the weight arena
 *   lm_kv.c       host side of the paged KV cache: block pool, sequences, step planning,
 *                 the per-step metadata (no device code: unit-tested on its own)
 *   lm_forward.c  the pieces and the runner callbacks
 *   lm_eos.c      the end-of-sequence token ids
 *   lm.c          the public API (vg_lm.h) */
#ifndef VG_LM_INTERNAL_H
#define VG_LM_INTERNAL_H

#include "../common/checkpoint.h"
#include "../common/config_json.h"
#include "../common/util.h"
#include "../common/weight_arena.h"
#include "vg/vg_device.h"
#include "vg/vg_lm.h"

#define LM_MAX_LAYERS 1024

enum lm_arch { LM_QWEN2 = 2, LM_QWEN3 = 3 };

typedef struct lm_cfg {
    int arch;
    int layers, hidden, heads, kv_heads, head_dim, inter, vocab;
    int inter_pad; /* inter rounded up to 16: zero rows and columns, exact, aligned GEMMs */
    int64_t max_pos;
    float eps, theta;
    int tied, qkv_bias, qk_norm;
} lm_cfg;

/* Parse and validate a config.json; errors name `where` and the member. */
vg_status lm_config_parse(const cJSON *root, const char *where, lm_cfg *cfg);

/* Tensor parallelism: rank `rank` of `size`'s share of the model (size 1: all of it). */
typedef struct lm_tp {
    int rank, size;
    int64_t q_row0;     /* its first row of q_proj (heads/size heads) */
    int64_t kv_row0;    /* its first row of k_proj and v_proj (its kv heads, or the one it
                           replicates) */
    int64_t inter_row0; /* its first row of gate_proj and up_proj, first column of down_proj */
    int64_t vs;         /* vocabulary rows of the head per rank: ceil(vocab / size) */
} lm_tp;

/* The share of rank `rank` of `size` of a model of config `full`, and the config of what the
 * rank holds (`local`: heads, kv_heads, inter and inter_pad are the rank's; the rest as full).
 * VG_ERR_INVALID_ARG naming the numbers when the model cannot be split `size` ways. */
vg_status lm_tp_plan(const lm_cfg *full, int size, int rank, lm_cfg *local, lm_tp *tp);
/* q, k and v widths of one row of the qkv projection. */
static inline int64_t lm_q_width(const lm_cfg *c) { return (int64_t)c->heads * c->head_dim; }
static inline int64_t lm_kv_width(const lm_cfg *c) { return (int64_t)c->kv_heads * c->head_dim; }
static inline int64_t lm_qkv_width(const lm_cfg *c) { return lm_q_width(c) + 2 * lm_kv_width(c); }

typedef struct lm_layer {
    void *in_norm, *qkv_w, *qkv_b, *q_norm, *k_norm, *o_w, *post_norm, *gu_w, *down_w;
} lm_layer; /* post_norm NULL: folded into gu_w; in_norm NULL: into qkv_w (lm_weights_load) */

typedef struct lm_weights {
    vg_arena_block mem;
    void *embed, *final_norm, *lm_head; /* lm_head == embed when tied */
    lm_layer *layers;                   /* cfg.layers */
} lm_weights;

/* The weights of rank tp->rank's share of a model of config `full` (the whole model for a
 * size of 1), `local` being that share's config (lm_tp_plan). With a tied head and size > 1 the
 * embedding is padded with zero rows up to size·vs, so that every rank's head slice of it is
 * whole. With fold_post_norm, each layer's post-attention norm weight multiplies gate|up's
 * columns instead of being loaded (the MLP's GEMM then takes a norm without a weight); with
 * fold_in_norm, its input norm's weight multiplies qkv's (the attention then scales the rows). */
vg_status lm_weights_load(vg_runtime *rt, const vg_ckpt *ck, uint64_t seed, const lm_cfg *full,
                          const lm_cfg *local, const lm_tp *tp, vg_dtype dt, int fold_post_norm,
                          int fold_in_norm, lm_weights *w);
void lm_weights_free(vg_runtime *rt, lm_weights *w);

/* ---- the host side of the KV cache ------------------------------------------------------- */

typedef struct lm_seq {
    int alive;
    int64_t len;     /* tokens in the cache */
    int nblocks;     /* blocks held: table[0 .. nblocks) */
    int32_t *table;  /* max_blocks entries */
} lm_seq;

typedef struct lm_kv {
    int block_size, max_blocks; /* max_blocks: blocks one sequence may hold */
    int64_t num_blocks;
    int32_t *free_list;         /* a stack of free block ids */
    int64_t nfree;
    int max_seqs;
    lm_seq *seqs;
    int32_t *tables;            /* max_seqs x max_blocks */
    int live;
} lm_kv;

vg_status lm_kv_init(lm_kv *kv, int64_t num_blocks, int block_size, int max_blocks, int max_seqs);
void lm_kv_free(lm_kv *kv);
vg_status lm_kv_seq_add(lm_kv *kv, int32_t *seq);
vg_status lm_kv_seq_free(lm_kv *kv, int32_t seq);

/* A validated step, ready for the device: per token and per sequence. */
typedef struct lm_plan {
    int64_t num_tokens;
    int num_seqs;
    int uniform;
    /* per token (num_tokens) */
    int32_t *tokens, *pos, *slots;
    /* per sequence (num_seqs) */
    int32_t *seq_ids, *qstart /* num_seqs + 1 */, *ctx, *last;
    /* rollback: each sequence's len and nblocks before the step */
    int64_t *old_len;
    int *old_nblocks;
    size_t cap_tokens, cap_seqs; /* allocated capacities */
} lm_plan;

void lm_plan_free(lm_plan *p);
/* Check a step against the model and the pool (nothing changes when refused), then take the
 * blocks it needs and fill `p`. vocab and max_pos bound token ids and positions. */
vg_status lm_plan_step(lm_kv *kv, const vg_lm_seq_tokens *seqs, int num, int vocab,
                       int64_t max_pos, lm_plan *p);
/* Undo lm_plan_step's block allocation (the step failed on the device). */
void lm_plan_rollback(lm_kv *kv, const lm_plan *p);
/* The step ran: sequences now hold their new tokens. */
void lm_plan_commit(lm_kv *kv, const lm_plan *p);

/* Layout of the int32 metadata buffer for a call padded to `tokens`, with `seqs` sequence
 * slots (min(tokens, max_seqs)) and block tables of max_blocks entries. Offsets in elements.
 * With head_parts > 1 (tensor parallelism: the ranks), head_idx holds seqs·head_parts entries,
 * the head's reorder table, which the caller writes after lm_meta_fill; it lies before the
 * block tables, so that the upload lm_meta_fill counts carries it. */
typedef struct lm_meta_layout {
    int64_t tokens;
    int seqs, max_blocks;
    size_t tok, pos, slots, last, qstart, ctx, head_idx, btab, total;
} lm_meta_layout;

void lm_meta_layout_for(int64_t padded_tokens, int max_seqs, int max_blocks, int head_parts,
                        lm_meta_layout *l);
/* Fill meta (layout l) from plan p (NULL: an all-padding call, for warm-up). Padding tokens
 * have token 0, position 0 and slot -1 (no KV write); padding sequences own no query rows and
 * no context. Returns how many int32 need uploading (the block tables of real sequences
 * only). */
size_t lm_meta_fill(const lm_kv *kv, const lm_plan *p, const lm_meta_layout *l, int32_t *meta);

/* ---- the model ---------------------------------------------------------------------------- */

/* LB_SLICE, LB_GATHER: the head under tensor parallelism (this rank's logits slice, every
 * rank's; the reorder table is in LB_META); empty otherwise. */
enum lm_buffer { LB_META, LB_H, LB_N, LB_QKV, LB_ATT, LB_GU, LB_M, LB_LAST, LB_LOGITS, LB_ARGMAX,
                 LB_SLICE, LB_GATHER, LB_COUNT_ };

struct vg_lm {
    vg_runtime *rt;
    lm_cfg cfg;        /* what this rank holds (the whole model without tensor parallelism) */
    lm_cfg full;       /* the whole model */
    lm_tp tp;
    vg_comm *comm;     /* NULL: no tensor parallelism */
    int comm_capture;  /* the device captures collectives (VG_CAP_COMM_CAPTURE) */
    vg_dtype dt;
    char model_type[32];
    lm_weights w;
    lm_kv kv;
    void *kv_mem;      /* the KV pool: per layer K then V, [num_blocks·block_size, kv_width] */
    size_t kv_bytes;
    vg_runner *runner;
    vg_piece *pieces;
    vg_model_iface iface;
    lm_plan plan;
    int head_rows;     /* sequences of the step being run (the head of mixed steps) */
    int fused_qkv;     /* the device has rotary_kv_store: one op after the qkv GEMM */
    int gated_gu;      /* the device gates a GEMM (gemm_silu_gate): no silu_mul op */
    int norm_gemm;     /* the device normalises a GEMM's A (gemm_rmsnorm_a): no rmsnorm op */
    int fold_norm;     /* the device normalises A without a weight (gemm_rmsnorm_a_unit): the
                        * post-attention norm's weight is folded into gate|up */
    int fused_attn;    /* the device has rotary_paged_attention: rotary and store in the attention */
    int fold_in;       /* and its norm_x (rotary_paged_attention_norm_x): the input norm's weight is
                        * folded into qkv, whose GEMM reads the residual rows as they are */
    vg_op_id op_attention; /* the attention piece's op */
    vg_op_id ops_in[6], ops_out[4], ops_head[4]; /* the ops each piece runs, for its capture */
    int nops_in, nops_out, nops_head;
    void *meta_stage;  /* host staging of the per-step metadata */
    size_t meta_bytes;
    void *logits_stage; /* host staging of logits rows padded to lm_logits_ld (tensor parallelism) */
    size_t logits_bytes;
    vg_lm_options opts;
    int64_t sizes[256];
    int num_eos;
    int32_t eos[VG_LM_MAX_EOS];
    struct lm_loops *loops; /* lm_loop.c: device-side generation loops, captured per bucket */
    int loop_logged;        /* the host-loop fallback was logged */
};

/* Row width of LB_LOGITS: the vocabulary, or size·vs under tensor parallelism (the columns from
 * vocab on are padding). */
static inline int64_t lm_logits_ld(const vg_lm *m)
{
    return m->tp.size > 1 ? (int64_t)m->tp.size * m->tp.vs : m->cfg.vocab;
}

static inline void *lm_k_cache(const vg_lm *m, int layer)
{
    return (char *)m->kv_mem + (size_t)2 * (size_t)layer * (m->kv_bytes / (2 * (size_t)m->cfg.layers));
}
static inline void *lm_v_cache(const vg_lm *m, int layer)
{
    return (char *)lm_k_cache(m, layer) + m->kv_bytes / (2 * (size_t)m->cfg.layers);
}

/* lm_eos.c: the end-of-sequence ids, from DIR/generation_config.json (dir may be NULL) or else
 * from config (named config_where in messages), each checked against vocab. */
vg_status lm_eos_read(const char *dir, const cJSON *config, const char *config_where, int vocab,
                      int32_t *ids, int *n);

/* lm_forward.c */
vg_status lm_pieces_init(vg_lm *m);
/* The metadata layout of m's calls padded to `tokens` (lm_meta_layout_for with m's cache and
 * tensor-parallel size): the pieces, prepare and the device loop all read it so. */
void lm_meta_layout_of(const vg_lm *m, int64_t tokens, lm_meta_layout *l);
vg_status lm_reserve(void *model, vg_runner *r, const vg_batch_desc *padded);
vg_status lm_prepare(void *model, vg_runner *r, const vg_batch_desc *real,
                     const vg_batch_desc *padded, vg_stream *s, const void *inputs);
/* lm_loop.c: drop the captured generation loops (before the runner or the model goes). */
void lm_loops_free(vg_lm *m);
/* Per-sequence slots of a call padded to `tokens`. */
static inline int lm_seq_slots(const vg_lm *m, int64_t tokens)
{
    return tokens < m->kv.max_seqs ? (int)tokens : m->kv.max_seqs;
}

#endif
