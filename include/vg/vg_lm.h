/* SPDX-License-Identifier: Apache-2.0 */
/* Decoder-only language models through the graph runner: Qwen2 and Qwen3, with a paged KV
 * cache.
 *
 * A model holds a pool of KV blocks (block_size token slots each, for every layer), allocated
 * once at load. Sequences are added and freed; each owns a block table into the pool. A step
 * takes any mix of sequences, each with its new tokens (a whole prompt, a chunk of one, or one
 * decode token), runs one forward and returns, per sequence, the logits of its last new token
 * and, optionally, the greedy token chosen on the device.
 *
 * Graphs: a step is keyed by its token count (bucketed into the capture sizes) and whether it
 * is uniform (every sequence adds exactly one token). Uniform steps run as one FULL graph per
 * bucket; mixed steps run PIECEWISE, with paged attention eager between the graphed pieces.
 * The key's num_requests is 0: the pieces size every per-sequence array for min(padded tokens,
 * max_seqs) sequences, so one graph serves any number of sequences of its bucket. Block tables,
 * context lengths, slot mappings and positions live in runner buffers refreshed before every
 * step: nothing per-request is baked into a graph. */
#ifndef VG_LM_H
#define VG_LM_H

#include "vg_comm.h"
#include "vg_runner.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct vg_lm vg_lm;

#define VG_LM_MAX_EOS 16 /* end-of-sequence token ids a model may name */

typedef struct vg_lm_options {
    uint32_t struct_size;
    vg_graph_mode mode;            /* default FULL_AND_PIECEWISE */
    const int64_t *capture_sizes;  /* token counts; NULL: vg_lm_default_sizes */
    int num_capture_sizes;
    int64_t max_capture_size;      /* steps above it run eagerly; 0: the largest capture size */
    int warmup;                    /* capture every uniform (decode) bucket at load time */
    vg_dtype compute_dtype;        /* VG_DTYPE_COUNT_ (default): the checkpoint's dtype */
    int block_size;                /* KV tokens per block; 0: 16 */
    int64_t num_blocks;            /* KV pool size in blocks; 0: from kv_memory_fraction */
    double kv_memory_fraction;     /* with num_blocks 0: this fraction of the device's free
                                      memory after the weights (0: 0.5), capped at what
                                      max_seqs sequences of max_position_embeddings need */
    int max_seqs;                  /* sequences alive at once; 0: 256 */
    int64_t max_seq_len;           /* tokens one sequence may reach; 0: max_position_embeddings.
                                      Sizes the block tables (and what each step uploads) */
    int profile_pieces;            /* time each piece of eager runs (vg_runner_piece_times) */
    /* Appended. Tensor parallelism (docs/tensor-parallel.md, "Sharded models"): with a
     * communicator of n ranks (vg_comm_create on this runtime), this process holds rank r's
     * share of the model, Megatron-style: its q heads (heads % n == 0) and kv heads (split when
     * kv_heads % n == 0, else replicated when n % kv_heads == 0), its columns of gate|up
     * (intermediate % n == 0) and rows of o_proj and down, its vocab rows of the head, and a KV
     * cache of its heads; an all-reduce follows o_proj and down, an all-gather the head. Every
     * rank must load the same model with the same options and then run the same steps with the
     * same batches (the collectives are matched by order): the graph decisions depend only on
     * the batch, so they agree. Results (logits, greedy tokens) are the whole model's on every
     * rank. NULL: no tensor parallelism. The communicator must outlive the model. */
    vg_comm *comm;
} vg_lm_options;

typedef struct vg_lm_info {
    char model_type[32]; /* "qwen2" or "qwen3" */
    int layers, hidden, heads, kv_heads, head_dim, intermediate, vocab;
    int64_t max_position;
    float rms_eps, rope_theta;
    int tied_embeddings, qkv_bias, qk_norm;
    vg_dtype compute_dtype;
    uint64_t weight_bytes;   /* device memory of the weights */
    int block_size;
    int64_t num_blocks, free_blocks;
    int max_blocks_per_seq;  /* ceil(max_seq_len / block_size), at most num_blocks */
    uint64_t kv_bytes;       /* device memory of the KV pool */
    int max_seqs, live_seqs;
    /* Appended (source-compatible; a program built against the header without these fields
     * must be rebuilt, as for any change of a vg_lm_info it allocates). The token ids that end
     * a sequence: eos_token_id of generation_config.json, else of config.json (an integer or a
     * list); num_eos 0 when the model names none. */
    int num_eos;
    int32_t eos_ids[VG_LM_MAX_EOS];
    /* Appended: the tensor-parallel rank and size (0 and 1 without a communicator). The shape
     * fields above are the whole model's; weight_bytes and kv_bytes this rank's. */
    int tp_rank, tp_size;
} vg_lm_info;

/* One sequence's part of a step. */
typedef struct vg_lm_seq_tokens {
    int32_t seq;            /* from vg_lm_seq_add */
    const int32_t *tokens;  /* its new tokens, in order */
    int32_t num_tokens;     /* >= 1 */
} vg_lm_seq_tokens;

/* What a step did. */
typedef struct vg_lm_step_info {
    vg_run_info run;     /* bucket, FULL / PIECEWISE / eager */
    int64_t num_tokens;  /* new tokens in the step */
    int uniform;         /* every sequence added one token */
    double total_ms;     /* host wall time of the step, copies included */
} vg_lm_step_info;

/* 1, 2, 4, 8, then every 8 up to 256 (35 sizes), as vLLM's decode ladder. */
VG_API int vg_lm_default_sizes(const int64_t **sizes);
VG_API void vg_lm_options_init(vg_lm_options *opts);
/* Load a Hugging Face model directory: config.json (model_type qwen2 or qwen3) and
 * model.safetensors or shards listed by model.safetensors.index.json, F32, BF16 or F16.
 * Refused with a message: another model_type, sliding-window attention in use, rope scaling
 * other than none/default, hidden_act other than silu. */
VG_API vg_status vg_lm_load(vg_runtime *rt, const char *model_dir, const vg_lm_options *opts,
                            vg_lm **out);
/* A model of a named configuration with deterministic synthetic weights, for benchmarks: no
 * weight files. `config` is "qwen2.5-0.5b" (24 layers, hidden 896, 14 heads, 2 KV heads,
 * intermediate 4864, vocab 151936, tied), "qwen3-0.6b" (28 layers, hidden 1024, 16 heads of
 * head_dim 128, 8 KV heads, intermediate 3072, vocab 151936, tied), "qwen2-tiny" (the test
 * fixture's shape), or the path of a config.json. dtype: F32, BF16 or F16. */
VG_API vg_status vg_lm_create_synthetic(vg_runtime *rt, const char *config, uint64_t seed,
                                        vg_dtype dtype, const vg_lm_options *opts, vg_lm **out);
/* Change the graph options (mode, capture sizes, threshold, warm-up, profile_pieces); the KV
 * pool, the sequences and the weights are kept. The runner is rebuilt: every graph is dropped. */
VG_API vg_status vg_lm_reconfigure(vg_lm *lm, const vg_lm_options *opts);
VG_API vg_status vg_lm_free(vg_lm *lm);
VG_API vg_status vg_lm_get_info(const vg_lm *lm, vg_lm_info *info);
/* The model fields of vg_lm_info (the shape, max_position, the EOS ids; the KV and runtime
 * fields are zero) from a model directory's config files, without reading a weight: for
 * checking a request against the model before loading it. Errors as vg_lm_load's. */
VG_API vg_status vg_lm_inspect(const char *model_dir, vg_lm_info *info);
/* The same for a configuration vg_lm_create_synthetic takes (a name or a config.json path). */
VG_API vg_status vg_lm_inspect_synthetic(const char *config, vg_lm_info *info);
VG_API vg_runner *vg_lm_runner(vg_lm *lm);
/* Whether a model of this shape (from vg_lm_inspect, vg_lm_inspect_synthetic or
 * vg_lm_get_info) splits over tp_size tensor-parallel ranks: VG_OK, or VG_ERR_INVALID_ARG naming
 * the numbers (heads % n, kv_heads % n or n % kv_heads, intermediate % n). For launchers, before
 * any rank starts. */
VG_API vg_status vg_lm_tp_check(const vg_lm_info *info, int tp_size);

/* A new, empty sequence: its id in *seq (0 .. max_seqs-1). VG_ERR_OUT_OF_MEMORY when max_seqs
 * sequences are alive. */
VG_API vg_status vg_lm_seq_add(vg_lm *lm, int32_t *seq);
/* Free a sequence: its blocks return to the pool and its id may be handed out again. */
VG_API vg_status vg_lm_seq_free(vg_lm *lm, int32_t seq);
/* Tokens a sequence holds in the KV cache (its next token's position); -1 for a bad id. */
VG_API int64_t vg_lm_seq_len(const vg_lm *lm, int32_t seq);

/* One forward over `num` sequences (distinct, alive), each with its new tokens. logits (may be
 * NULL) receives [num, vocab] F32: row i is the next-token logits after seqs[i]'s last new
 * token; greedy (may be NULL) receives the argmax of each row, computed on the device. info may
 * be NULL. A refused step (empty, an unknown or freed sequence, a token id outside the vocabulary,
 * a position beyond max_position_embeddings, not enough free KV blocks for the whole step)
 * returns VG_ERR_INVALID_ARG or VG_ERR_OUT_OF_MEMORY with a message and changes nothing. */
VG_API vg_status vg_lm_step(vg_lm *lm, const vg_lm_seq_tokens *seqs, int num, float *logits,
                            int32_t *greedy, vg_lm_step_info *info);

/* ---- generation: many decode steps in one call ------------------------------------------------ */

/* Where vg_lm_generate runs its loop. */
typedef enum vg_lm_loop {
    VG_LM_LOOP_AUTO = 0,   /* on the device where the backend can (VG_CAP_GRAPH_LOOP), else host */
    VG_LM_LOOP_HOST = 1,   /* one step per host round trip */
    VG_LM_LOOP_DEVICE = 2  /* asked for the device: still falls back to the host, logged, when it
                              cannot (the result is the same) */
} vg_lm_loop;

typedef struct vg_lm_generate_options {
    uint32_t struct_size;
    int32_t max_new_tokens; /* N >= 1: tokens each sequence may produce */
    const int32_t *eos;     /* a sequence stops after producing one of these (may be NULL) */
    int32_t num_eos;
    vg_lm_loop loop;
} vg_lm_generate_options;

/* One sequence of a generation: already prefilled, with `token` its next input (the greedy pick
 * after its prompt, not yet in the KV cache). */
typedef struct vg_lm_gen_seq {
    int32_t seq;
    int32_t token;
    int32_t max_new_tokens; /* 0: the options'; else at most this many (and at most N) */
} vg_lm_gen_seq;

typedef struct vg_lm_generate_info {
    int device_loop;     /* 1: every step ran on the device, from one launch */
    char fallback[256];  /* why the host loop ran although the loop was AUTO or DEVICE ("" else) */
    int64_t steps;       /* decode steps run: the largest count */
    int launches;        /* forwards the host submitted (device loop: 1) */
    int readbacks;       /* times the host waited for results (device loop: 1) */
    double total_ms;     /* host wall time of the call */
} vg_lm_generate_info;

VG_API void vg_lm_generate_options_init(vg_lm_generate_options *opts);
/* Greedy decoding of `num` sequences together, up to N = opts->max_new_tokens steps: each step
 * feeds every unfinished sequence its last token and takes the argmax of the logits as its next.
 * A sequence finishes at one of the EOS ids (kept as its last token), at its max_new_tokens, or
 * at its length limit (max_seq_len, max_position_embeddings); a finished sequence repeats its
 * last step without effect while others go on, so every step has the same shape. tokens
 * receives [num, N] (row i: counts[i] tokens of seqs[i]); logits (may be NULL) receives
 * [num, N, vocab] F32, the logits each token was picked from. Afterwards each sequence holds
 * its fed tokens in the cache (its length grew by counts[i]) and the last token produced is its
 * next input. KV blocks for every step are taken before the first: a generation the pool cannot
 * hold whole is refused (VG_ERR_OUT_OF_MEMORY) and changes nothing, as a refused argument does.
 * On the device loop (docs/runner.md) the steps run in one graph launch and the host reads the
 * results once; the host loop gives the same tokens and logits. info may be NULL. */
VG_API vg_status vg_lm_generate(vg_lm *lm, const vg_lm_gen_seq *seqs, int num,
                                const vg_lm_generate_options *opts, int32_t *tokens,
                                int32_t *counts, float *logits, vg_lm_generate_info *info);

#ifdef __cplusplus
}
#endif
#endif
