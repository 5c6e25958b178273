/* SPDX-License-Identifier: Apache-2.0 */
/* The language model's public API: load a checkpoint, manage sequences, run steps. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/model_base.h"
#include "../common/model_load.h"
#include "lm_internal.h"

/* 1, 2, 4, 8, then every 8 up to 256: vLLM's decode ladder. A constant table, so that loads on
 * several threads share it without a race. */
static const int64_t k_lm_sizes[] = {
    1, 2, 4, 8, 16, 24, 32, 40, 48, 56, 64, 72, 80, 88, 96, 104, 112, 120, 128, 136, 144, 152,
    160, 168, 176, 184, 192, 200, 208, 216, 224, 232, 240, 248, 256
};

int vg_lm_default_sizes(const int64_t **sizes)
{
    if (sizes) *sizes = k_lm_sizes;
    return (int)VGM_ARRAY_LEN(k_lm_sizes);
}

void vg_lm_options_init(vg_lm_options *o)
{
    if (o) VGM_OPTIONS_DEFAULTS(o);
}

static vg_status make_runner(vg_lm *m)
{
    const int64_t *sizes = m->sizes;
    int n = m->opts.num_capture_sizes;
    if (!n) n = vg_lm_default_sizes(&sizes);
    vgm_graph_opts g = VGM_GRAPH_OPTS(m->opts, sizes, n);
    /* uniform steps: one token per sequence, so no bucket above max_seqs' is ever used */
    vg_batch_desc like = {.num_tokens = m->kv.max_seqs, .uniform = 1};
    return vgm_runner_make(m->rt, &m->iface, &g, &like, &m->runner);
}

/* The KV pool: blocks of block_size slots, K and V for every layer. */
static vg_status make_kv(vg_lm *m)
{
    const lm_cfg *c = &m->cfg;
    const vg_lm_options *o = &m->opts;
    int bs = o->block_size ? o->block_size : 16;
    int max_seqs = o->max_seqs ? o->max_seqs : 256;
    if (bs < 1 || bs > 4096 || max_seqs < 1 || max_seqs > (1 << 20))
        return vg_error_set(VG_ERR_INVALID_ARG, "lm: block_size %d or max_seqs %d out of range", bs,
                            max_seqs);
    int64_t max_len = o->max_seq_len ? o->max_seq_len : c->max_pos;
    if (max_len < 1 || max_len > c->max_pos)
        return vg_error_set(VG_ERR_INVALID_ARG, "lm: max_seq_len %lld is not in [1, "
                                                "max_position_embeddings %lld]",
                            (long long)max_len, (long long)c->max_pos);
    int64_t max_blocks = (max_len + bs - 1) / bs;
    size_t per_block = (size_t)2 * (size_t)c->layers * (size_t)bs * (size_t)lm_kv_width(c) * vg_dtype_size(m->dt);
    int64_t blocks = o->num_blocks;
    if (blocks < 0) return vg_error_set(VG_ERR_INVALID_ARG, "lm: num_blocks %lld", (long long)blocks);
    if (!blocks) {
        double f = o->kv_memory_fraction ? o->kv_memory_fraction : 0.5;
        if (!(f > 0 && f <= 1))
            return vg_error_set(VG_ERR_INVALID_ARG, "lm: kv_memory_fraction %g is not in (0, 1]", f);
        vg_device_info di = {.struct_size = sizeof di};
        VGM_TRY(vg_runtime_device_info(m->rt, &di));
        blocks = (int64_t)((double)di.mem_free * f / (double)per_block);
        int64_t cap = max_blocks * max_seqs;
        if (blocks > cap) blocks = cap;
        if (blocks < 1)
            return vg_error_set(VG_ERR_OUT_OF_MEMORY, "lm: no device memory left for one KV block "
                                                      "(%zu bytes)", per_block);
    }
    if (max_blocks > blocks) max_blocks = blocks; /* no sequence holds more than the pool */
    VGM_TRY(lm_kv_init(&m->kv, blocks, bs, (int)max_blocks, max_seqs));
    m->kv_bytes = per_block * (size_t)blocks;
    vg_status st = vg_mem_alloc(m->rt, m->kv_bytes, &m->kv_mem);
    if (st != VG_OK)
        return vg_error_prefix("lm: KV pool of %lld blocks (%zu bytes): ", (long long)blocks, m->kv_bytes);
    return VG_OK;
}

static vg_status build(vg_lm *m, const vg_ckpt *ck, uint64_t seed, vg_dtype dt, const vg_lm_options *o)
{
    m->opts = *o;
    VGM_TRY(vgm_sizes_copy("lm", o->capture_sizes, o->num_capture_sizes, m->sizes,
                           (int)VGM_ARRAY_LEN(m->sizes), &m->opts.num_capture_sizes));
    m->opts.capture_sizes = NULL;
    m->dt = dt;
    if (dt != VG_DTYPE_F32 && dt != VG_DTYPE_BF16 && dt != VG_DTYPE_F16)
        return vg_error_set(VG_ERR_INVALID_ARG, "lm: compute dtype must be F32, BF16 or F16");
    /* tensor parallelism: m->cfg becomes this rank's share of the whole model (m->full) */
    m->full = m->cfg;
    m->comm = o->comm;
    int size = o->comm ? vg_comm_size(o->comm) : 1, rank = o->comm ? vg_comm_rank(o->comm) : 0;
    VGM_TRY(lm_tp_plan(&m->full, size, rank, &m->cfg, &m->tp));
    m->comm_capture = (vg_runtime_caps(m->rt) & VG_CAP_COMM_CAPTURE) != 0;
    /* op table version 9: where a device cuts a norm without a weight into the gate's silu_mul,
     * folding the norm's weight into the weights saves the MLP an rmsnorm launch */
    m->fold_norm = vgm_has_op(m->rt, VG_OP_GEMM_RMSNORM_A_UNIT, dt);
    /* op table version 10: where the attention scales the qkv rows by their norm's 1/rms, the
     * input norm's weight folds into qkv and the layer loses its first launch. Not in F16: the
     * projection of rows not normalised (a residual row's rms can be in the hundreds) could pass
     * F16's range before the factor brings it back */
    m->fold_in = dt != VG_DTYPE_F16 && vgm_has_op(m->rt, VG_OP_ROTARY_PAGED_ATTENTION_NORM_X, dt) &&
                 vgm_has_op(m->rt, VG_OP_ROTARY_PAGED_ATTENTION, dt); /* what makes m->fused_attn */
    VGM_TRY(lm_weights_load(m->rt, ck, seed, &m->full, &m->cfg, &m->tp, dt, m->fold_norm, m->fold_in, &m->w));
    VGM_TRY(make_kv(m));
    VGM_TRY(lm_pieces_init(m));
    return make_runner(m);
}

static void free_any(void *m) { vg_lm_free(m); }

vg_status vg_lm_load(vg_runtime *rt, const char *dir, const vg_lm_options *opts, vg_lm **out)
{
    if (!rt || !dir || !out) return vg_error_set(VG_ERR_INVALID_ARG, "vg_lm_load: NULL argument");
    *out = NULL;
    vg_lm_options def;
    vg_lm_options_init(&def);
    if (!opts) opts = &def;
    VGM_TRY(vgm_options_check("vg_lm_load", opts->struct_size, sizeof *opts, "vg_lm_options_init",
                              opts->mode));
    vg_lm *m = calloc(1, sizeof *m);
    if (m) m->rt = rt;
    vg_ckpt *ck = NULL;
    VGM_TRY(vgm_load_begin("vg_lm_load", dir, m, free_any, &ck));
    char where[4200];
    snprintf(where, sizeof where, "%s/config.json", vg_ckpt_dir(ck));
    vg_status st = lm_config_parse(vg_ckpt_config(ck), where, &m->cfg);
    if (st == VG_OK)
        st = lm_eos_read(vg_ckpt_dir(ck), vg_ckpt_config(ck), where, m->cfg.vocab, m->eos, &m->num_eos);
    snprintf(m->model_type, sizeof m->model_type, "%s", m->cfg.arch == LM_QWEN3 ? "qwen3" : "qwen2");
    static const char *const embedding[] = {"model.embed_tokens.weight"}; /* its dtype rules */
    if (st == VG_OK) st = build(m, ck, 0, vgm_checkpoint_dtype(ck, opts->compute_dtype, embedding, 1), opts);
    return vgm_load_end(st, ck, dir, m, free_any, (void **)out);
}

static const vgm_synthetic k_synthetic[] = {
    {"qwen2.5-0.5b", "{\"model_type\": \"qwen2\", \"hidden_size\": 896, \"num_hidden_layers\": 24, "
                     "\"num_attention_heads\": 14, \"num_key_value_heads\": 2, "
                     "\"intermediate_size\": 4864, \"vocab_size\": 151936, "
                     "\"max_position_embeddings\": 32768, \"rope_theta\": 1000000.0, "
                     "\"rms_norm_eps\": 1e-6, \"tie_word_embeddings\": true}"},
    {"qwen3-0.6b", "{\"model_type\": \"qwen3\", \"hidden_size\": 1024, \"num_hidden_layers\": 28, "
                   "\"num_attention_heads\": 16, \"num_key_value_heads\": 8, \"head_dim\": 128, "
                   "\"intermediate_size\": 3072, \"vocab_size\": 151936, "
                   "\"max_position_embeddings\": 40960, \"rope_theta\": 1000000.0, "
                   "\"rms_norm_eps\": 1e-6, \"tie_word_embeddings\": true}"},
    {"qwen2-tiny", "{\"model_type\": \"qwen2\", \"hidden_size\": 128, \"num_hidden_layers\": 3, "
                   "\"num_attention_heads\": 4, \"num_key_value_heads\": 2, "
                   "\"intermediate_size\": 256, \"vocab_size\": 512, "
                   "\"max_position_embeddings\": 4096, \"rope_theta\": 1000000.0, "
                   "\"rms_norm_eps\": 1e-6, \"tie_word_embeddings\": true}"},
};

/* A config.json file, parsed as vg_lm_load parses a checkpoint's (NULL, with the error set,
 * when it cannot be read or is not a JSON object). */
static cJSON *read_config(const char *path)
{
    cJSON *root = NULL;
    vg_status st = vg_json_parse_file(path, &root);
    if (st == VG_ERR_NOT_FOUND) {
        char known[256];
        vgm_synthetic_names(k_synthetic, VGM_ARRAY_LEN(k_synthetic), known, sizeof known);
        vg_error_set(VG_ERR_NOT_FOUND, "lm: no synthetic configuration '%s' (known: %s) and no "
                                       "such config.json file", path, known);
    }
    return st == VG_OK ? root : NULL;
}

/* The parsed JSON of a synthetic configuration: a name of k_synthetic or a config.json path. */
static vg_status synthetic_config(const char *config, cJSON **root)
{
    const char *json = vgm_synthetic_find(k_synthetic, VGM_ARRAY_LEN(k_synthetic), config);
    if (!json) {
        *root = read_config(config);
        return *root ? VG_OK : vg_last_status();
    }
    *root = cJSON_Parse(json);
    return *root ? VG_OK : vg_error_set(VG_ERR_OUT_OF_MEMORY, "lm: out of memory");
}

vg_status vg_lm_create_synthetic(vg_runtime *rt, const char *config, uint64_t seed, vg_dtype dt,
                                 const vg_lm_options *opts, vg_lm **out)
{
    if (!rt || !config || !out)
        return vg_error_set(VG_ERR_INVALID_ARG, "vg_lm_create_synthetic: NULL argument");
    *out = NULL;
    vg_lm_options def;
    vg_lm_options_init(&def);
    if (!opts) opts = &def;
    VGM_TRY(vgm_options_check("vg_lm_create_synthetic", opts->struct_size, sizeof *opts,
                              "vg_lm_options_init", opts->mode));
    cJSON *root = NULL;
    VGM_TRY(synthetic_config(config, &root));
    vg_lm *m = calloc(1, sizeof *m);
    vg_status st = m ? lm_config_parse(root, config, &m->cfg)
                     : vg_error_set(VG_ERR_OUT_OF_MEMORY, "vg_lm_create_synthetic: out of memory");
    if (st == VG_OK) st = lm_eos_read(NULL, root, config, m->cfg.vocab, m->eos, &m->num_eos);
    cJSON_Delete(root);
    if (m) {
        m->rt = rt;
        snprintf(m->model_type, sizeof m->model_type, "%s", m->cfg.arch == LM_QWEN3 ? "qwen3" : "qwen2");
    }
    if (st == VG_OK) st = build(m, NULL, seed, dt, opts);
    if (st == VG_OK) *out = m;
    else vg_lm_free(m);
    return st;
}

vg_status vg_lm_reconfigure(vg_lm *m, const vg_lm_options *o)
{
    if (!m || !o) return vg_error_set(VG_ERR_INVALID_ARG, "vg_lm_reconfigure: NULL argument");
    VGM_TRY(vgm_options_check("vg_lm_reconfigure", o->struct_size, sizeof *o, "vg_lm_options_init",
                              o->mode));
    int num = 0;
    VGM_TRY(vgm_sizes_copy("lm", o->capture_sizes, o->num_capture_sizes, m->sizes,
                           (int)VGM_ARRAY_LEN(m->sizes), &num));
    lm_loops_free(m); /* they replay the old runner's buffers */
    vg_runner_destroy(m->runner);
    m->runner = NULL;
    m->opts.mode = o->mode;
    m->opts.max_capture_size = o->max_capture_size;
    m->opts.warmup = o->warmup;
    m->opts.profile_pieces = o->profile_pieces;
    m->opts.num_capture_sizes = num;
    return make_runner(m);
}

vg_status vg_lm_free(vg_lm *m)
{
    if (!m) return VG_OK;
    lm_loops_free(m);
    vg_runner_destroy(m->runner);
    if (m->meta_stage) vg_host_free(m->rt, m->meta_stage);
    if (m->logits_stage) vg_host_free(m->rt, m->logits_stage);
    if (m->kv_mem) vg_mem_free(m->rt, m->kv_mem);
    lm_kv_free(&m->kv);
    lm_plan_free(&m->plan);
    lm_weights_free(m->rt, &m->w);
    free(m->pieces);
    free(m);
    return VG_OK;
}

/* The model part of vg_lm_info (the rest zero). */
static void model_info(const lm_cfg *c, const int32_t *eos, int num_eos, vg_lm_info *i)
{
    memset(i, 0, sizeof *i);
    snprintf(i->model_type, sizeof i->model_type, "%s", c->arch == LM_QWEN3 ? "qwen3" : "qwen2");
    i->layers = c->layers, i->hidden = c->hidden, i->heads = c->heads, i->kv_heads = c->kv_heads;
    i->head_dim = c->head_dim, i->intermediate = c->inter, i->vocab = c->vocab;
    i->max_position = c->max_pos, i->rms_eps = c->eps, i->rope_theta = c->theta;
    i->tied_embeddings = c->tied, i->qkv_bias = c->qkv_bias, i->qk_norm = c->qk_norm;
    i->num_eos = num_eos;
    i->tp_size = 1;
    memcpy(i->eos_ids, eos, (size_t)num_eos * sizeof *eos);
}

vg_status vg_lm_inspect(const char *model_dir, vg_lm_info *info)
{
    if (!model_dir || !info) return vg_error_set(VG_ERR_INVALID_ARG, "vg_lm_inspect: NULL argument");
    memset(info, 0, sizeof *info);
    vg_ckpt *ck = NULL;
    VGM_TRY(vg_ckpt_open(model_dir, &ck));
    char where[4200];
    snprintf(where, sizeof where, "%s/config.json", vg_ckpt_dir(ck));
    lm_cfg c;
    int32_t eos[VG_LM_MAX_EOS];
    int n = 0;
    vg_status st = lm_config_parse(vg_ckpt_config(ck), where, &c);
    if (st == VG_OK) st = lm_eos_read(vg_ckpt_dir(ck), vg_ckpt_config(ck), where, c.vocab, eos, &n);
    vg_ckpt_close(ck);
    if (st == VG_OK) model_info(&c, eos, n, info);
    return st;
}

vg_status vg_lm_inspect_synthetic(const char *config, vg_lm_info *info)
{
    if (!config || !info) return vg_error_set(VG_ERR_INVALID_ARG, "vg_lm_inspect_synthetic: NULL argument");
    memset(info, 0, sizeof *info);
    cJSON *root = NULL;
    VGM_TRY(synthetic_config(config, &root));
    lm_cfg c;
    int32_t eos[VG_LM_MAX_EOS];
    int n = 0;
    vg_status st = lm_config_parse(root, config, &c);
    if (st == VG_OK) st = lm_eos_read(NULL, root, config, c.vocab, eos, &n);
    cJSON_Delete(root);
    if (st == VG_OK) model_info(&c, eos, n, info);
    return st;
}

vg_status vg_lm_get_info(const vg_lm *m, vg_lm_info *i)
{
    if (!m || !i) return vg_error_set(VG_ERR_INVALID_ARG, "vg_lm_get_info: NULL argument");
    model_info(&m->full, m->eos, m->num_eos, i);
    i->tp_rank = m->tp.rank, i->tp_size = m->tp.size;
    i->compute_dtype = m->dt, i->weight_bytes = m->w.mem.bytes;
    i->block_size = m->kv.block_size, i->num_blocks = m->kv.num_blocks, i->free_blocks = m->kv.nfree;
    i->max_blocks_per_seq = m->kv.max_blocks, i->kv_bytes = m->kv_bytes;
    i->max_seqs = m->kv.max_seqs, i->live_seqs = m->kv.live;
    return VG_OK;
}

vg_runner *vg_lm_runner(vg_lm *m) { return m ? m->runner : NULL; }

vg_status vg_lm_seq_add(vg_lm *m, int32_t *seq)
{
    if (!m || !seq) return vg_error_set(VG_ERR_INVALID_ARG, "vg_lm_seq_add: NULL argument");
    return lm_kv_seq_add(&m->kv, seq);
}

vg_status vg_lm_seq_free(vg_lm *m, int32_t seq)
{
    if (!m) return vg_error_set(VG_ERR_INVALID_ARG, "vg_lm_seq_free: NULL argument");
    return lm_kv_seq_free(&m->kv, seq);
}

int64_t vg_lm_seq_len(const vg_lm *m, int32_t seq)
{
    if (!m || seq < 0 || seq >= m->kv.max_seqs || !m->kv.seqs[seq].alive) return -1;
    return m->kv.seqs[seq].len;
}

vg_status vg_lm_step(vg_lm *m, const vg_lm_seq_tokens *seqs, int num, float *logits,
                     int32_t *greedy, vg_lm_step_info *info)
{
    double t0 = vgm_now_ms();
    if (!m) return vg_error_set(VG_ERR_INVALID_ARG, "vg_lm_step: NULL model");
    if (info) memset(info, 0, sizeof *info);
    lm_plan *p = &m->plan;
    VGM_TRY(lm_plan_step(&m->kv, seqs, num, m->cfg.vocab, m->cfg.max_pos, p));
    /* the key: token count and uniformity; see vg_lm.h for why num_requests stays 0 */
    vg_batch_desc d = {.num_tokens = p->num_tokens, .uniform = (uint8_t)p->uniform};
    vg_run_info run;
    vg_stream *s = vg_runner_stream(m->runner);
    vg_status st = vg_runner_run(m->runner, &d, p, &run);
    size_t V = (size_t)m->cfg.vocab, ld = (size_t)lm_logits_ld(m);
    const float *dev_logits = vg_runner_buffer(m->runner, LB_LOGITS);
    /* rows padded to ld (tensor parallelism): one copy into the staging, compacted after */
    float *rows = ld == V ? logits : NULL;
    if (st == VG_OK && logits && ld != V &&
        (st = vgm_stage_reserve(m->rt, &m->logits_stage, &m->logits_bytes, (size_t)num * ld * sizeof(float))) == VG_OK)
        rows = m->logits_stage;
    if (st == VG_OK && rows) st = vg_mem_copy_d2h(s, rows, dev_logits, (size_t)num * ld * sizeof(float));
    if (st == VG_OK && greedy)
        st = vg_mem_copy_d2h(s, greedy, vg_runner_buffer(m->runner, LB_ARGMAX), (size_t)num * sizeof(int32_t));
    if (st == VG_OK) st = vg_stream_sync(s);
    for (int i = 0; st == VG_OK && rows && rows != logits && i < num; i++)
        memcpy(logits + (size_t)i * V, rows + (size_t)i * ld, V * sizeof(float));
    if (st != VG_OK) {
        lm_plan_rollback(&m->kv, p);
        return vg_error_prefix("lm: step of %lld tokens over %d sequences: ",
                               (long long)p->num_tokens, num);
    }
    lm_plan_commit(&m->kv, p);
    if (info) {
        info->run = run;
        info->num_tokens = p->num_tokens;
        info->uniform = p->uniform;
        info->total_ms = vgm_now_ms() - t0;
    }
    return VG_OK;
}
