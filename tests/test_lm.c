/* SPDX-License-Identifier: Apache-2.0 */
/* The Qwen2 / Qwen3 language model.
 *
 * Host side (no device): config.json validation, the KV block pool, step planning (slot
 * mapping across block boundaries, refusals that change nothing, rollback) and the metadata
 * layout.
 *
 * Device side, on the backend VG_BACKEND names: the fixtures' prompts and long cases against
 * Hugging Face's teacher-forced logits and greedy tokens, in every graph mode, with capture
 * sizes that force padding and a threshold that sends large steps eagerly: all prompts in one
 * step, staggered prompts (mixed steps), chunked prefill, a sequence freed and restarted in
 * recycled blocks, and bad inputs. Until the backend has op table version 4 these tests SKIP. */
#include <math.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "test_util.h"
#include "lm/lm_internal.h"
#include "vg/vg_lm.h"
#include "vg/vg_safetensors.h"

#ifndef TEST_DATA_DIR
#error "TEST_DATA_DIR must point at tests/data"
#endif
#define QWEN2_DIR TEST_DATA_DIR "/qwen2_tiny"
#define QWEN2_BF16_DIR TEST_DATA_DIR "/qwen2_tiny_bf16_sharded"
#define QWEN3_DIR TEST_DATA_DIR "/qwen3_tiny"

static vg_model_test_device g_dev; /* the runtime; gpu: tolerances 1e-4 for F32 on kunlun_stub and
                                    * opencl, 1e-3 on cuda and hip; graphs: else every mode is eager */

/* ---- host side: config --------------------------------------------------------------------- */

static vg_status parse_json(const char *json, lm_cfg *c)
{
    cJSON *root = cJSON_Parse(json);
    assert_non_null(root);
    vg_status st = lm_config_parse(root, "test/config.json", c);
    cJSON_Delete(root);
    return st;
}

#define BASE "\"hidden_size\": 96, \"num_hidden_layers\": 2, \"num_attention_heads\": 4, " \
             "\"num_key_value_heads\": 1, \"intermediate_size\": 100, \"vocab_size\": 301"

static void test_config(void **state)
{
    (void)state;
    lm_cfg c;
    VG_CHECK(parse_json("{\"model_type\": \"qwen2\", " BASE ", \"head_dim\": 48}", &c));
    assert_int_equal(c.arch, LM_QWEN2);
    assert_int_equal(c.head_dim, 48);
    assert_int_equal(c.kv_heads, 1);
    assert_int_equal(c.qkv_bias, 1);
    assert_int_equal(c.qk_norm, 0);
    assert_int_equal(c.inter_pad, 112);
    assert_int_equal(c.max_pos, 32768);
    assert_int_equal(c.tied, 0);
    VG_CHECK(parse_json("{\"model_type\": \"qwen3\", " BASE ", \"head_dim\": 16, "
                        "\"rope_scaling\": null, \"tie_word_embeddings\": true, "
                        "\"rope_parameters\": {\"rope_type\": \"default\", \"rope_theta\": 5e5}}", &c));
    assert_int_equal(c.arch, LM_QWEN3);
    assert_int_equal(c.qk_norm, 1);
    assert_int_equal(c.qkv_bias, 0);
    assert_int_equal(c.tied, 1);
    assert_true(fabsf(c.theta - 5e5f) < 1);
    VG_CHECK_FAILS(parse_json("{\"model_type\": \"llama\", " BASE "}", &c), VG_ERR_UNSUPPORTED,
                   "model_type 'llama'");
    VG_CHECK_FAILS(parse_json("{\"model_type\": \"qwen2\", " BASE ", \"head_dim\": 48, "
                              "\"use_sliding_window\": true}", &c), VG_ERR_UNSUPPORTED, "sliding");
    VG_CHECK_FAILS(parse_json("{\"model_type\": \"qwen2\", " BASE ", \"head_dim\": 48, "
                              "\"rope_scaling\": {\"type\": \"yarn\", \"factor\": 4}}", &c),
                   VG_ERR_UNSUPPORTED, "yarn");
    VG_CHECK_FAILS(parse_json("{\"model_type\": \"qwen3\", " BASE ", \"head_dim\": 12}", &c),
                   VG_ERR_UNSUPPORTED, "head_dim 12");
    VG_CHECK_FAILS(parse_json("{\"model_type\": \"qwen2\", " BASE ", \"head_dim\": 48, "
                              "\"hidden_act\": \"gelu\"}", &c), VG_ERR_UNSUPPORTED, "hidden_act");
    VG_CHECK_FAILS(parse_json("{\"model_type\": \"qwen2\", \"hidden_size\": 96}", &c),
                   VG_ERR_FORMAT, "num_hidden_layers");
    VG_CHECK_FAILS(parse_json("{\"model_type\": \"qwen2\", \"hidden_size\": 96, "
                              "\"num_hidden_layers\": 2, \"num_attention_heads\": 4, "
                              "\"num_key_value_heads\": 3, \"intermediate_size\": 100, "
                              "\"vocab_size\": 301, \"head_dim\": 48}", &c),
                   VG_ERR_FORMAT, "multiple");
}

/* ---- the end-of-sequence ids: generation_config.json, else config.json ------------------- */

static vg_status eos_json(const char *dir, const char *json, int32_t *ids, int *n)
{
    cJSON *root = cJSON_Parse(json);
    assert_non_null(root);
    vg_status st = lm_eos_read(dir, root, "test/config.json", 512, ids, n);
    cJSON_Delete(root);
    return st;
}

static void write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static void test_eos(void **state)
{
    (void)state;
    int32_t ids[VG_LM_MAX_EOS];
    int n = -1;
    VG_CHECK(eos_json(NULL, "{\"eos_token_id\": 7}", ids, &n));
    assert_int_equal(n, 1);
    assert_int_equal(ids[0], 7);
    VG_CHECK(eos_json(NULL, "{\"eos_token_id\": [3, 511]}", ids, &n));
    assert_int_equal(n, 2);
    assert_int_equal(ids[0], 3);
    assert_int_equal(ids[1], 511);
    VG_CHECK(eos_json(NULL, "{\"eos_token_id\": null}", ids, &n));
    assert_int_equal(n, 0);
    VG_CHECK(eos_json(NULL, "{}", ids, &n));
    assert_int_equal(n, 0);
    VG_CHECK_FAILS(eos_json(NULL, "{\"eos_token_id\": 512}", ids, &n), VG_ERR_FORMAT, "[0, vocab_size 512)");
    VG_CHECK_FAILS(eos_json(NULL, "{\"eos_token_id\": [1, -1]}", ids, &n), VG_ERR_FORMAT, "eos_token_id");
    VG_CHECK_FAILS(eos_json(NULL, "{\"eos_token_id\": [1.5]}", ids, &n), VG_ERR_FORMAT, "eos_token_id");
    VG_CHECK_FAILS(eos_json(NULL, "{\"eos_token_id\": \"2\"}", ids, &n), VG_ERR_FORMAT, "eos_token_id");
    VG_CHECK_FAILS(eos_json(NULL, "{\"eos_token_id\": 1e300}", ids, &n), VG_ERR_FORMAT, "eos_token_id");
    VG_CHECK_FAILS(eos_json(NULL, "{\"eos_token_id\": [0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16]}", ids, &n),
                   VG_ERR_UNSUPPORTED, "at most 16");
    /* generation_config.json wins when it names ids; one without leaves config.json's */
    char dir[] = "/tmp/vg_test_eos_XXXXXX", path[64];
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/generation_config.json", dir);
    write_text(path, "{\"eos_token_id\": [9, 10], \"max_new_tokens\": 5}");
    VG_CHECK(eos_json(dir, "{\"eos_token_id\": 2}", ids, &n));
    assert_int_equal(n, 2);
    assert_int_equal(ids[0], 9);
    assert_int_equal(ids[1], 10);
    write_text(path, "{\"do_sample\": false}");
    VG_CHECK(eos_json(dir, "{\"eos_token_id\": 2}", ids, &n));
    assert_int_equal(n, 1);
    assert_int_equal(ids[0], 2);
    write_text(path, "{\"eos_token_id\": [9,");
    VG_CHECK_FAILS(eos_json(dir, "{\"eos_token_id\": 2}", ids, &n), VG_ERR_FORMAT,
                   "generation_config.json: not a JSON object");
    unlink(path);
    rmdir(dir);
    /* vg_lm_inspect: the model's side of vg_lm_info without loading it */
    vg_lm_info info;
    VG_CHECK(vg_lm_inspect(QWEN2_DIR "/model", &info));
    assert_string_equal(info.model_type, "qwen2");
    assert_int_equal(info.vocab, 512);
    assert_int_equal(info.max_position, 4096);
    assert_int_equal(info.num_eos, 1);
    assert_int_equal(info.eos_ids[0], 2);
    assert_int_equal(info.num_blocks, 0);
    assert_int_equal(info.weight_bytes, 0);
    VG_CHECK(vg_lm_inspect_synthetic("qwen2-tiny", &info));
    assert_int_equal(info.layers, 3);
    assert_int_equal(info.num_eos, 0);
    VG_CHECK_FAILS(vg_lm_inspect("/nonexistent", &info), VG_ERR_NOT_FOUND, "nonexistent");
    VG_CHECK_FAILS(vg_lm_inspect_synthetic("qwen9", &info), VG_ERR_NOT_FOUND, "no synthetic configuration 'qwen9'");
    /* a loaded model carries them too */
    vg_lm_options o;
    vg_lm_options_init(&o);
    o.num_blocks = 4, o.max_seqs = 1, o.mode = VG_MODE_NONE;
    vg_lm *lm = NULL;
    VG_CHECK(vg_lm_load(g_dev.rt, QWEN2_DIR "/model", &o, &lm));
    VG_CHECK(vg_lm_get_info(lm, &info));
    assert_int_equal(info.num_eos, 1);
    assert_int_equal(info.eos_ids[0], 2);
    assert_int_equal(info.num_blocks, 4);
    vg_lm_free(lm);
}

/* ---- host side: KV pool and step planning ------------------------------------------------ */

static void test_plan(void **state)
{
    (void)state;
    lm_kv kv;
    lm_plan p = {0};
    VG_CHECK(lm_kv_init(&kv, 6, 4, 3, 3)); /* 6 blocks of 4 slots, 3 blocks per sequence */
    int32_t a, b;
    VG_CHECK(lm_kv_seq_add(&kv, &a));
    VG_CHECK(lm_kv_seq_add(&kv, &b));
    int32_t toks[12] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
    vg_lm_seq_tokens s1[2] = {{a, toks, 6}, {b, toks, 1}};
    VG_CHECK(lm_plan_step(&kv, s1, 2, 100, 100, &p));
    assert_int_equal(p.num_tokens, 7);
    assert_int_equal(p.uniform, 0);
    /* a: blocks 0, 1 (slots 0..5); b: block 2 (slot 8) */
    const int32_t want_slots[7] = {0, 1, 2, 3, 4, 5, 8};
    const int32_t want_pos[7] = {0, 1, 2, 3, 4, 5, 0};
    for (int i = 0; i < 7; i++) {
        assert_int_equal(p.slots[i], want_slots[i]);
        assert_int_equal(p.pos[i], want_pos[i]);
    }
    assert_int_equal(p.qstart[0], 0);
    assert_int_equal(p.qstart[1], 6);
    assert_int_equal(p.qstart[2], 7);
    assert_int_equal(p.ctx[0], 6);
    assert_int_equal(p.ctx[1], 1);
    assert_int_equal(p.last[0], 5);
    assert_int_equal(p.last[1], 6);
    lm_plan_commit(&kv, &p);
    assert_int_equal(kv.nfree, 3);
    /* a decode step: uniform, a's token 6 in slot 6 (block 1), b's 1 in slot 9 */
    vg_lm_seq_tokens s2[2] = {{b, toks, 1}, {a, toks, 1}};
    VG_CHECK(lm_plan_step(&kv, s2, 2, 100, 100, &p));
    assert_int_equal(p.uniform, 1);
    assert_int_equal(p.slots[0], 9);
    assert_int_equal(p.slots[1], 6);
    assert_int_equal(p.pos[1], 6);
    /* the step failed on the device: nothing moved */
    lm_plan_rollback(&kv, &p);
    assert_int_equal(kv.seqs[a].len, 6);
    assert_int_equal(kv.nfree, 3);
    /* refusals change nothing */
    int32_t bad[1] = {100};
    vg_lm_seq_tokens r1[1] = {{a, bad, 1}};
    VG_CHECK_FAILS(lm_plan_step(&kv, r1, 1, 100, 100, &p), VG_ERR_INVALID_ARG, "vocabulary");
    VG_CHECK_FAILS(lm_plan_step(&kv, s1, 0, 100, 100, &p), VG_ERR_INVALID_ARG, "empty step");
    vg_lm_seq_tokens r2[2] = {{a, toks, 1}, {a, toks, 1}};
    VG_CHECK_FAILS(lm_plan_step(&kv, r2, 2, 100, 100, &p), VG_ERR_INVALID_ARG, "twice");
    vg_lm_seq_tokens r3[1] = {{a, toks, 5}};
    VG_CHECK_FAILS(lm_plan_step(&kv, r3, 1, 100, 10, &p), VG_ERR_INVALID_ARG, "max_position");
    vg_lm_seq_tokens r4[1] = {{a, toks, 7}}; /* 13 tokens: 4 blocks > 3 per sequence */
    VG_CHECK_FAILS(lm_plan_step(&kv, r4, 1, 100, 100, &p), VG_ERR_INVALID_ARG, "blocks");
    int32_t c;
    VG_CHECK(lm_kv_seq_add(&kv, &c));
    /* a +6 (1 more block), b +4 (1), c +12 (3): 5 blocks, 3 free: the whole step is refused */
    vg_lm_seq_tokens r5[3] = {{a, toks, 6}, {b, toks, 4}, {c, toks, 12}};
    VG_CHECK_FAILS(lm_plan_step(&kv, r5, 3, 100, 100, &p), VG_ERR_OUT_OF_MEMORY, "exhausted");
    assert_int_equal(kv.nfree, 3);
    assert_int_equal(kv.seqs[a].nblocks, 2);
    assert_int_equal(kv.seqs[c].nblocks, 0);
    /* freed sequences give their blocks back; a freed id is refused */
    VG_CHECK(lm_kv_seq_free(&kv, a));
    assert_int_equal(kv.nfree, 5);
    vg_lm_seq_tokens r6[1] = {{a, toks, 1}};
    VG_CHECK_FAILS(lm_plan_step(&kv, r6, 1, 100, 100, &p), VG_ERR_INVALID_ARG, "not alive");
    VG_CHECK_FAILS(lm_kv_seq_free(&kv, a), VG_ERR_INVALID_ARG, "not alive");
    vg_lm_seq_tokens r7[1] = {{c, toks, 12}};
    VG_CHECK(lm_plan_step(&kv, r7, 1, 100, 100, &p));
    lm_plan_commit(&kv, &p);
    /* c reuses a's blocks in their order, then takes a fresh one */
    assert_int_equal(kv.seqs[c].table[0], 0);
    assert_int_equal(kv.seqs[c].table[1], 1);
    assert_int_equal(kv.seqs[c].table[2], 3);
    assert_int_equal(p.slots[4], 4);
    assert_int_equal(p.slots[8], 12);

    /* metadata: 8 padded tokens, 3 sequence slots (max_seqs), padding rows write nothing */
    VG_CHECK(lm_plan_step(&kv, s2 + 0, 1, 100, 100, &p)); /* b decodes one token */
    lm_meta_layout l;
    lm_meta_layout_for(8, kv.max_seqs, kv.max_blocks, 1, &l);
    assert_int_equal(l.seqs, 3);
    assert_int_equal(l.btab % 4, 0);
    int32_t *meta = calloc(l.total, sizeof(int32_t));
    assert_non_null(meta);
    size_t n = lm_meta_fill(&kv, &p, &l, meta);
    assert_int_equal(n, l.btab + (size_t)kv.max_blocks);
    assert_int_equal(meta[l.slots + 0], 9);
    for (int r = 1; r < 8; r++) {
        assert_int_equal(meta[l.slots + r], -1);
        assert_int_equal(meta[l.tok + r], 0);
    }
    assert_int_equal(meta[l.qstart + 0], 0);
    for (int s = 1; s <= 3; s++) assert_int_equal(meta[l.qstart + s], 1);
    assert_int_equal(meta[l.ctx + 0], 2);
    assert_int_equal(meta[l.ctx + 1], 0);
    assert_int_equal(meta[l.btab + 0], kv.seqs[b].table[0]);
    const int64_t *sizes = NULL;
    int ns = vg_lm_default_sizes(&sizes);
    assert_int_equal(ns, 35);
    assert_int_equal(sizes[0], 1);
    assert_int_equal(sizes[3], 8);
    assert_int_equal(sizes[ns - 1], 256);
    for (int i = 1; i < ns; i++) assert_true(sizes[i] > sizes[i - 1]);
    lm_meta_layout_for(2, 8, 3, 1, &l); /* fewer tokens than max_seqs: one slot per token */
    assert_int_equal(l.seqs, 2);
    free(meta);
    lm_plan_free(&p);
    lm_kv_free(&kv);
}

/* ---- fixtures ------------------------------------------------------------------------------- */

typedef struct lm_case {
    int B;
    int64_t lens[16], N;
    int32_t *seq[16];   /* expected sequence b: L_b + N tokens */
    float *logits[16];  /* [L_b + N, vocab] */
    float *margin[16];
    int64_t vocab;
} lm_case;

static void case_open(lm_case *k, const char *dir, const char *name)
{
    char path[1024];
    memset(k, 0, sizeof *k);
    vg_st_file *in, *ex;
    snprintf(path, sizeof path, "%s/%s.input.safetensors", dir, name);
    VG_CHECK(vg_st_open(path, &in));
    snprintf(path, sizeof path, "%s/%s.expected.safetensors", dir, name);
    VG_CHECK(vg_st_open(path, &ex));
    const vg_st_tensor *pl = vg_st_find(in, "prompt_lens"), *mn = vg_st_find(in, "max_new_tokens");
    assert_non_null(pl);
    assert_non_null(mn);
    k->B = (int)pl->shape[0];
    assert_true(k->B <= 16);
    memcpy(k->lens, pl->data, (size_t)k->B * sizeof(int64_t));
    memcpy(&k->N, mn->data, sizeof(int64_t));
    for (int b = 0; b < k->B; b++) {
        char nm[64];
        int64_t L = k->lens[b] + k->N;
        snprintf(nm, sizeof nm, "sequence.%d", b);
        const vg_st_tensor *t = vg_st_find(ex, nm);
        assert_non_null(t);
        assert_int_equal(t->shape[0], L);
        k->seq[b] = malloc((size_t)L * sizeof(int32_t));
        for (int64_t i = 0; i < L; i++) {
            int64_t v;
            memcpy(&v, (const char *)t->data + i * 8, 8);
            k->seq[b][i] = (int32_t)v;
        }
        snprintf(nm, sizeof nm, "logits.%d", b);
        t = vg_st_find(ex, nm);
        assert_non_null(t);
        k->vocab = t->shape[1];
        k->logits[b] = malloc(t->nbytes);
        memcpy(k->logits[b], t->data, t->nbytes);
        snprintf(nm, sizeof nm, "margin.%d", b);
        t = vg_st_find(ex, nm);
        assert_non_null(t);
        k->margin[b] = malloc(t->nbytes);
        memcpy(k->margin[b], t->data, t->nbytes);
    }
    vg_st_close(in);
    vg_st_close(ex);
}

static void case_close(lm_case *k)
{
    for (int b = 0; b < k->B; b++) free(k->seq[b]), free(k->logits[b]), free(k->margin[b]);
}

/* ---- device side ---------------------------------------------------------------------------- */

static const int64_t k_sizes[] = {1, 2, 4, 8, 16};

/* Load, or skip when the backend cannot run the model yet (no op table version 4). */
static vg_lm *load(const char *dir, vg_graph_mode mode, int64_t blocks, int max_seqs)
{
    vg_lm_options o;
    vg_lm_options_init(&o);
    o.mode = mode;
    o.capture_sizes = k_sizes;
    o.num_capture_sizes = 5;
    o.max_capture_size = 8; /* steps of 9..16 tokens and above run eagerly */
    o.num_blocks = blocks;
    o.max_seqs = max_seqs;
    char path[1024];
    snprintf(path, sizeof path, "%s/model", dir);
    vg_lm *lm = NULL;
    vg_status st = vg_lm_load(g_dev.rt, path, &o, &lm);
    if (st == VG_ERR_UNSUPPORTED && (strstr(vg_last_error(), "version 4") || strstr(vg_last_error(), "has no"))) {
        print_message("SKIP: %s\n", vg_last_error());
        skip();
    }
    VG_CHECK(st);
    return lm;
}

/* How a case is fed to the model. */
typedef struct schedule {
    int chunk;      /* prefill tokens per step and sequence (0: whole prompt) */
    int stagger;    /* sequence b joins at step b·stagger */
    int restart_b;  /* >= 0: free sequence restart_b after restart_step steps and feed it anew */
    int restart_step;
} schedule;

/* Feed every sequence its expected tokens (teacher forcing) and compare, after every step, the
 * logits of each sequence's last new token with the reference row, and its greedy token with
 * the reference's next token up to the first near tie. Returns the largest relative error. */
/* Steps by path: [uniform][vg_run_path]. */
static int g_paths[2][3];

static double run_case(vg_lm *lm, const lm_case *k, const schedule *sc, double tol)
{
    int B = k->B;
    int32_t ids[16];
    int64_t fed[16] = {0};
    int tie[16] = {0};
    double err[16] = {0}, refmax[16] = {0};
    for (int b = 0; b < B; b++) VG_CHECK(vg_lm_seq_add(lm, &ids[b]));
    float *logits = malloc((size_t)B * (size_t)k->vocab * sizeof(float));
    int32_t greedy[16];
    vg_lm_seq_tokens st[16];
    int idx[16];
    int restarted = 0;
    for (int step = 0;; step++) {
        if (sc->restart_b >= 0 && !restarted && step == sc->restart_step) {
            int b = sc->restart_b;
            VG_CHECK(vg_lm_seq_free(lm, ids[b]));
            VG_CHECK(vg_lm_seq_add(lm, &ids[b]));
            fed[b] = 0, tie[b] = 0, restarted = 1;
        }
        int n = 0;
        for (int b = 0; b < B; b++) {
            int64_t L = k->lens[b], end = L + k->N - 1; /* tokens to feed in all */
            if (fed[b] >= end || step < b * sc->stagger) continue;
            int64_t take = 1;
            if (fed[b] < L) take = sc->chunk && sc->chunk < L - fed[b] ? sc->chunk : L - fed[b];
            st[n] = (vg_lm_seq_tokens){ids[b], k->seq[b] + fed[b], (int32_t)take};
            idx[n++] = b;
        }
        if (!n) break;
        vg_lm_step_info info;
        VG_CHECK(vg_lm_step(lm, st, n, logits, greedy, &info));
        g_paths[info.uniform][info.run.path]++;
        if (info.num_tokens > 8) assert_int_equal(info.run.path, VG_RUN_EAGER); /* the threshold */
        for (int i = 0; i < n; i++) {
            int b = idx[i];
            fed[b] += st[i].num_tokens;
            int64_t row = fed[b] - 1;
            assert_int_equal(vg_lm_seq_len(lm, ids[b]), fed[b]);
            const float *want = k->logits[b] + row * k->vocab, *got = logits + (size_t)i * (size_t)k->vocab;
            float mx = 0;
            for (int64_t v = 0; v < k->vocab; v++) {
                double d = fabs((double)got[v] - want[v]);
                if (d > err[b]) err[b] = d;
                if (fabs(want[v]) > refmax[b]) refmax[b] = fabs(want[v]);
                if (fabsf(want[v]) > mx) mx = fabsf(want[v]);
            }
            if (row < k->lens[b] - 1 || tie[b]) continue; /* greedy tokens: generated positions */
            if (k->margin[b][row] < 1e-3f * mx) {
                tie[b] = 1;
                continue;
            }
            if (greedy[i] != k->seq[b][row + 1])
                print_message("sequence %d, position %lld: greedy %d, reference %d\n", b,
                              (long long)row, greedy[i], k->seq[b][row + 1]);
            assert_int_equal(greedy[i], k->seq[b][row + 1]);
        }
    }
    double worst = 0;
    for (int b = 0; b < B; b++) {
        double rel = err[b] / (refmax[b] > 0 ? refmax[b] : 1);
        if (rel > worst) worst = rel;
        VG_CHECK(vg_lm_seq_free(lm, ids[b]));
    }
    free(logits);
    if (worst > tol) print_message("relative error %.3g > %.3g\n", worst, tol);
    assert_true(worst <= tol);
    return worst;
}

static const vg_graph_mode k_modes[] = {VG_MODE_NONE, VG_MODE_PIECEWISE, VG_MODE_FULL,
                                        VG_MODE_FULL_AND_PIECEWISE};

static void every_mode(const char *dir, const char *name, const schedule *sc, double tol)
{
    lm_case k;
    case_open(&k, dir, name);
    for (size_t i = 0; i < sizeof k_modes / sizeof k_modes[0]; i++) {
        vg_lm *lm = load(dir, k_modes[i], 96, 8);
        memset(g_paths, 0, sizeof g_paths);
        double e = run_case(lm, &k, sc, tol);
        /* decode steps run FULL in full and full_and_piecewise, mixed steps PIECEWISE: the
         * attention is graph-safe for uniform steps only */
        vg_graph_mode mode = g_dev.graphs ? k_modes[i] : VG_MODE_NONE; /* without, downgraded */
        int full = mode == VG_MODE_FULL || mode == VG_MODE_FULL_AND_PIECEWISE;
        if (mode == VG_MODE_NONE) {
            assert_int_equal(g_paths[0][VG_RUN_FULL] + g_paths[1][VG_RUN_FULL], 0);
            assert_int_equal(g_paths[0][VG_RUN_PIECEWISE] + g_paths[1][VG_RUN_PIECEWISE], 0);
        } else {
            assert_int_equal(g_paths[0][VG_RUN_FULL], 0);
            if (full) assert_true(g_paths[1][VG_RUN_FULL] > 0);
            assert_int_equal(g_paths[1][VG_RUN_PIECEWISE] > 0, !full);
        }
        if (mode != VG_MODE_NONE && sc->chunk && sc->chunk <= 3)
            assert_true(g_paths[0][VG_RUN_PIECEWISE] > 0); /* some mixed steps fit a bucket */
        print_message("%s %s mode %s chunk %d stagger %d: relative error %.3g\n", dir, name,
                      vg_graph_mode_name(k_modes[i]), sc->chunk, sc->stagger, e);
        vg_lm_info info;
        VG_CHECK(vg_lm_get_info(lm, &info));
        assert_int_equal(info.free_blocks, info.num_blocks); /* every block came back */
        VG_CHECK(vg_lm_free(lm));
    }
    case_close(&k);
}

static double f32_tol(void) { return g_dev.gpu ? 1e-3 : 1e-4; }

static void test_qwen2_prompts(void **s) { (void)s; every_mode(QWEN2_DIR, "prompts", &(schedule){.restart_b = -1}, f32_tol()); }
static void test_qwen3_prompts(void **s) { (void)s; every_mode(QWEN3_DIR, "prompts", &(schedule){.restart_b = -1}, f32_tol()); }
static void test_bf16_sharded(void **s) { (void)s; every_mode(QWEN2_BF16_DIR, "prompts", &(schedule){.restart_b = -1}, 5e-2); }
static void test_staggered(void **s)
{
    (void)s;
    every_mode(QWEN2_DIR, "prompts", &(schedule){.stagger = 3, .restart_b = -1}, f32_tol());
    every_mode(QWEN3_DIR, "prompts", &(schedule){.stagger = 3, .restart_b = -1}, f32_tol());
}
static void test_long_chunked(void **s)
{
    (void)s;
    every_mode(QWEN2_DIR, "long", &(schedule){.chunk = 64, .restart_b = -1}, f32_tol());
    every_mode(QWEN3_DIR, "long", &(schedule){.chunk = 64, .restart_b = -1}, f32_tol());
}
static void test_small_chunks(void **s)
{
    (void)s; /* most steps mix prefill chunks with decodes; logits at many prompt positions */
    every_mode(QWEN2_DIR, "prompts", &(schedule){.chunk = 3, .stagger = 1, .restart_b = -1}, f32_tol());
    every_mode(QWEN3_DIR, "prompts", &(schedule){.chunk = 3, .stagger = 1, .restart_b = -1}, f32_tol());
}
static void test_free_and_reuse(void **s)
{
    (void)s; /* sequence 3 (40 tokens) is freed mid-decode and restarted in recycled blocks */
    every_mode(QWEN2_DIR, "prompts", &(schedule){.chunk = 8, .restart_b = 3, .restart_step = 8}, f32_tol());
}

static void test_bad_inputs(void **state)
{
    (void)state;
    lm_case k;
    case_open(&k, QWEN2_DIR, "prompts");
    vg_lm *lm = load(QWEN2_DIR, VG_MODE_FULL_AND_PIECEWISE, 4, 4); /* a pool of 4 blocks */
    int32_t a, b;
    VG_CHECK(vg_lm_seq_add(lm, &a));
    VG_CHECK(vg_lm_seq_add(lm, &b));
    float *logits = malloc((size_t)k.vocab * 2 * sizeof(float));
    int32_t g[2];
    /* prompt 1 (17 tokens: 2 blocks) */
    vg_lm_seq_tokens s1 = {a, k.seq[1], (int32_t)k.lens[1]};
    VG_CHECK(vg_lm_step(lm, &s1, 1, logits, g, NULL));
    int32_t big = (int32_t)k.vocab;
    vg_lm_seq_tokens bad_tok = {a, &big, 1};
    VG_CHECK_FAILS(vg_lm_step(lm, &bad_tok, 1, logits, g, NULL), VG_ERR_INVALID_ARG, "vocabulary");
    VG_CHECK_FAILS(vg_lm_step(lm, NULL, 0, logits, g, NULL), VG_ERR_INVALID_ARG, "empty");
    vg_lm_info info;
    VG_CHECK(vg_lm_get_info(lm, &info));
    int32_t *many = calloc((size_t)info.max_position + 1, sizeof(int32_t));
    vg_lm_seq_tokens too_far = {b, many, (int32_t)info.max_position + 1};
    VG_CHECK_FAILS(vg_lm_step(lm, &too_far, 1, logits, g, NULL), VG_ERR_INVALID_ARG,
                   "max_position_embeddings");
    free(many);
    /* prompt 3 (40 tokens: 3 blocks) does not fit beside it: refused whole */
    vg_lm_seq_tokens two[2] = {{a, k.seq[1] + k.lens[1], 1}, {b, k.seq[3], (int32_t)k.lens[3]}};
    VG_CHECK_FAILS(vg_lm_step(lm, two, 2, logits, g, NULL), VG_ERR_OUT_OF_MEMORY, "exhausted");
    assert_int_equal(vg_lm_seq_len(lm, a), k.lens[1]);
    assert_int_equal(vg_lm_seq_len(lm, b), 0);
    VG_CHECK(vg_lm_seq_free(lm, b));
    vg_lm_seq_tokens freed = {b, k.seq[0], 1};
    VG_CHECK_FAILS(vg_lm_step(lm, &freed, 1, logits, g, NULL), VG_ERR_INVALID_ARG, "not alive");
    /* the earlier sequence is untouched: its next decode matches the reference */
    VG_CHECK(vg_lm_step(lm, two, 1, logits, g, NULL));
    const float *want = k.logits[1] + k.lens[1] * k.vocab;
    double e = 0, mx = 0;
    for (int64_t v = 0; v < k.vocab; v++) {
        if (fabs(logits[v] - want[v]) > e) e = fabs(logits[v] - want[v]);
        if (fabs(want[v]) > mx) mx = fabs(want[v]);
    }
    assert_true(e / mx <= f32_tol());
    free(logits);
    VG_CHECK(vg_lm_free(lm));
    case_close(&k);
}

static void test_load_errors(void **state)
{
    (void)state;
    vg_lm *lm = NULL;
    VG_CHECK_FAILS(vg_lm_load(g_dev.rt, "/nonexistent", NULL, &lm), VG_ERR_NOT_FOUND, "nonexistent");
    assert_null(lm);
    /* a vision checkpoint is not a language model */
    vg_status st = vg_lm_load(g_dev.rt, TEST_DATA_DIR "/qwen2_5_vl_tiny/model", NULL, &lm);
    assert_int_not_equal(st, VG_OK);
    assert_non_null(strstr(vg_last_error(), "model_type"));
    assert_null(lm);
}

/* ---- shapes other than the fixtures': a synthetic checkpoint and a host reference ---------- */

typedef struct synth {
    const char *type;
    int layers, hidden, heads, kv_heads, head_dim, inter, vocab, tied;
    uint64_t rng;
    /* the weights, as written (HF names): [name] -> data */
    int count;
    char names[64][96];
    float *data[64];
    int64_t shape[64][2];
    int ndim[64];
} synth;

static float synth_rand(synth *m)
{
    m->rng = m->rng * 6364136223846793005ull + 1442695040888963407ull;
    return ((float)(m->rng >> 40) / (float)(1ull << 24) - 0.5f);
}

static float *synth_add(synth *m, const char *name, int64_t rows, int64_t cols, float base, float scale)
{
    assert_true(m->count < 64);
    int i = m->count++;
    snprintf(m->names[i], sizeof m->names[i], "%s", name);
    m->shape[i][0] = rows, m->shape[i][1] = cols, m->ndim[i] = cols ? 2 : 1;
    size_t n = (size_t)rows * (size_t)(cols ? cols : 1);
    m->data[i] = malloc(n * sizeof(float));
    for (size_t k = 0; k < n; k++) m->data[i][k] = base + scale * synth_rand(m);
    return m->data[i];
}

static const float *synth_get(const synth *m, const char *fmt, int layer)
{
    char name[96];
    snprintf(name, sizeof name, fmt, layer);
    for (int i = 0; i < m->count; i++)
        if (strcmp(m->names[i], name) == 0) return m->data[i];
    return NULL;
}

/* Write DIR/config.json and DIR/model.safetensors. */
static void synth_write(synth *m, const char *dir)
{
    int64_t H = m->hidden, qw = (int64_t)m->heads * m->head_dim, kw = (int64_t)m->kv_heads * m->head_dim;
    int qwen2 = strcmp(m->type, "qwen2") == 0;
    synth_add(m, "model.embed_tokens.weight", m->vocab, H, 0, 1.0f);
    for (int l = 0; l < m->layers; l++) {
        char n[96];
#define W(suffix, r, c, base, sc) snprintf(n, sizeof n, "model.layers.%d." suffix, l), synth_add(m, n, r, c, base, sc)
        W("input_layernorm.weight", H, 0, 1, 0.2f);
        W("self_attn.q_proj.weight", qw, H, 0, 0.3f);
        W("self_attn.k_proj.weight", kw, H, 0, 0.3f);
        W("self_attn.v_proj.weight", kw, H, 0, 0.3f);
        if (qwen2) {
            W("self_attn.q_proj.bias", qw, 0, 0, 0.2f);
            W("self_attn.k_proj.bias", kw, 0, 0, 0.2f);
            W("self_attn.v_proj.bias", kw, 0, 0, 0.2f);
        } else {
            W("self_attn.q_norm.weight", m->head_dim, 0, 1, 0.2f);
            W("self_attn.k_norm.weight", m->head_dim, 0, 1, 0.2f);
        }
        W("self_attn.o_proj.weight", H, qw, 0, 0.3f);
        W("post_attention_layernorm.weight", H, 0, 1, 0.2f);
        W("mlp.gate_proj.weight", m->inter, H, 0, 0.3f);
        W("mlp.up_proj.weight", m->inter, H, 0, 0.3f);
        W("mlp.down_proj.weight", H, m->inter, 0, 0.3f);
#undef W
    }
    synth_add(m, "model.norm.weight", H, 0, 1, 0.2f);
    if (!m->tied) synth_add(m, "lm_head.weight", m->vocab, H, 0, 0.5f);
    vg_st_write_tensor t[64];
    for (int i = 0; i < m->count; i++)
        t[i] = (vg_st_write_tensor){m->names[i], VG_DTYPE_F32, m->ndim[i], m->shape[i], m->data[i]};
    char path[1024];
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    VG_CHECK(vg_st_write(path, t, m->count));
    snprintf(path, sizeof path, "%s/config.json", dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fprintf(f, "{\"model_type\": \"%s\", \"hidden_size\": %d, \"num_hidden_layers\": %d, "
               "\"num_attention_heads\": %d, \"num_key_value_heads\": %d, \"head_dim\": %d, "
               "\"intermediate_size\": %d, \"vocab_size\": %d, \"rms_norm_eps\": 1e-6, "
               "\"rope_theta\": 10000.0, \"max_position_embeddings\": 512, "
               "\"tie_word_embeddings\": %s, \"use_sliding_window\": false, \"hidden_act\": \"silu\"}",
            m->type, m->hidden, m->layers, m->heads, m->kv_heads, m->head_dim, m->inter, m->vocab,
            m->tied ? "true" : "false");
    fclose(f);
}

static void synth_free(synth *m)
{
    for (int i = 0; i < m->count; i++) free(m->data[i]);
}

static void ref_rmsnorm(double *x, int n, const float *w)
{
    double ss = 0;
    for (int i = 0; i < n; i++) ss += x[i] * x[i];
    double r = 1.0 / sqrt(ss / n + 1e-6);
    for (int i = 0; i < n; i++) x[i] = x[i] * r * w[i];
}

/* y[o] = Σ x[i]·W[o, i] (+ b[o]) */
static void ref_linear(const double *x, int in, const float *W, const float *b, int out, double *y)
{
    for (int o = 0; o < out; o++) {
        double acc = b ? b[o] : 0;
        for (int i = 0; i < in; i++) acc += x[i] * W[(size_t)o * in + i];
        y[o] = acc;
    }
}

static void ref_rotary(double *x, int hd, int pos)
{
    int half = hd / 2;
    for (int i = 0; i < half; i++) {
        double a = pos * pow(10000.0, -2.0 * i / hd), c = cos(a), s = sin(a);
        double x1 = x[i], x2 = x[i + half];
        x[i] = x1 * c - x2 * s;
        x[i + half] = x2 * c + x1 * s;
    }
}

/* Logits after every position of toks[0..T): [T, vocab]. */
static void ref_forward(const synth *m, const int32_t *toks, int T, double *logits)
{
    int H = m->hidden, hd = m->head_dim, nq = m->heads, nkv = m->kv_heads, I = m->inter;
    int qw = nq * hd, kw = nkv * hd, qwen3 = strcmp(m->type, "qwen3") == 0;
    double *x = calloc((size_t)T * H, sizeof(double)), *n = malloc((size_t)H * sizeof(double));
    double *q = malloc((size_t)T * qw * sizeof(double)), *k = malloc((size_t)T * kw * sizeof(double));
    double *v = malloc((size_t)T * kw * sizeof(double)), *att = malloc((size_t)qw * sizeof(double));
    double *g = malloc((size_t)I * sizeof(double)), *u = malloc((size_t)I * sizeof(double));
    double *o = malloc((size_t)H * sizeof(double)), *sc = malloc((size_t)T * sizeof(double));
    const float *E = synth_get(m, "model.embed_tokens.weight", 0);
    for (int t = 0; t < T; t++)
        for (int i = 0; i < H; i++) x[(size_t)t * H + i] = E[(size_t)toks[t] * H + i];
    for (int l = 0; l < m->layers; l++) {
#define G(suffix) synth_get(m, "model.layers.%d." suffix, l)
        for (int t = 0; t < T; t++) {
            memcpy(n, x + (size_t)t * H, (size_t)H * sizeof(double));
            ref_rmsnorm(n, H, G("input_layernorm.weight"));
            ref_linear(n, H, G("self_attn.q_proj.weight"), G("self_attn.q_proj.bias"), qw, q + (size_t)t * qw);
            ref_linear(n, H, G("self_attn.k_proj.weight"), G("self_attn.k_proj.bias"), kw, k + (size_t)t * kw);
            ref_linear(n, H, G("self_attn.v_proj.weight"), G("self_attn.v_proj.bias"), kw, v + (size_t)t * kw);
            for (int h = 0; h < nq; h++) {
                if (qwen3) ref_rmsnorm(q + (size_t)t * qw + h * hd, hd, G("self_attn.q_norm.weight"));
                ref_rotary(q + (size_t)t * qw + h * hd, hd, t);
            }
            for (int h = 0; h < nkv; h++) {
                if (qwen3) ref_rmsnorm(k + (size_t)t * kw + h * hd, hd, G("self_attn.k_norm.weight"));
                ref_rotary(k + (size_t)t * kw + h * hd, hd, t);
            }
        }
        for (int t = 0; t < T; t++) {
            for (int h = 0; h < nq; h++) {
                int kh = h / (nq / nkv);
                double mx = -1e300, sum = 0;
                for (int s = 0; s <= t; s++) {
                    double d = 0;
                    for (int i = 0; i < hd; i++) d += q[(size_t)t * qw + h * hd + i] * k[(size_t)s * kw + kh * hd + i];
                    sc[s] = d / sqrt((double)hd);
                    mx = sc[s] > mx ? sc[s] : mx;
                }
                for (int s = 0; s <= t; s++) sum += (sc[s] = exp(sc[s] - mx));
                for (int i = 0; i < hd; i++) {
                    double acc = 0;
                    for (int s = 0; s <= t; s++) acc += sc[s] * v[(size_t)s * kw + kh * hd + i];
                    att[h * hd + i] = acc / sum;
                }
            }
            double *xt = x + (size_t)t * H;
            ref_linear(att, qw, G("self_attn.o_proj.weight"), NULL, H, o);
            for (int i = 0; i < H; i++) xt[i] += o[i];
            memcpy(n, xt, (size_t)H * sizeof(double));
            ref_rmsnorm(n, H, G("post_attention_layernorm.weight"));
            ref_linear(n, H, G("mlp.gate_proj.weight"), NULL, I, g);
            ref_linear(n, H, G("mlp.up_proj.weight"), NULL, I, u);
            for (int i = 0; i < I; i++) g[i] = g[i] / (1 + exp(-g[i])) * u[i];
            ref_linear(g, I, G("mlp.down_proj.weight"), NULL, H, o);
            for (int i = 0; i < H; i++) xt[i] += o[i];
        }
#undef G
    }
    const float *head = m->tied ? E : synth_get(m, "lm_head.weight", 0);
    for (int t = 0; t < T; t++) {
        memcpy(n, x + (size_t)t * H, (size_t)H * sizeof(double));
        ref_rmsnorm(n, H, synth_get(m, "model.norm.weight", 0));
        ref_linear(n, H, head, NULL, m->vocab, logits + (size_t)t * m->vocab);
    }
    free(x), free(n), free(q), free(k), free(v), free(att), free(g), free(u), free(o), free(sc);
}

/* Two sequences (37 and 3 tokens, then decodes) of a model with odd shapes, in every mode and
 * with chunked prefill, against the host reference at every fed position. */
static void check_synthetic(synth *m)
{
    char dir[] = "/tmp/vg_lm_synth_XXXXXX";
    assert_non_null(mkdtemp(dir));
    synth_write(m, dir);
    enum { S = 2, TOTAL = 45 };
    const int lens[S] = {37, 3};
    int32_t toks[S][TOTAL];
    for (int b = 0; b < S; b++)
        for (int i = 0; i < TOTAL; i++) toks[b][i] = (int32_t)((b * 131 + i * 37 + 5) % m->vocab);
    double *ref[S];
    for (int b = 0; b < S; b++) {
        ref[b] = malloc((size_t)TOTAL * m->vocab * sizeof(double));
        ref_forward(m, toks[b], TOTAL, ref[b]);
    }
    float *logits = malloc((size_t)S * m->vocab * sizeof(float));
    int32_t greedy[S];
    const int chunks[] = {0, 1, 6};
    for (size_t mi = 0; mi < sizeof k_modes / sizeof k_modes[0]; mi++)
        for (size_t ci = 0; ci < 3; ci++) {
            vg_lm_options o;
            vg_lm_options_init(&o);
            o.mode = k_modes[mi];
            o.capture_sizes = k_sizes;
            o.num_capture_sizes = 5;
            o.max_capture_size = 8;
            o.num_blocks = 16;
            o.max_seqs = 4;
            vg_lm *lm = NULL;
            VG_CHECK(vg_lm_load(g_dev.rt, dir, &o, &lm));
            int32_t id[S];
            int fed[S] = {0};
            for (int b = 0; b < S; b++) VG_CHECK(vg_lm_seq_add(lm, &id[b]));
            double err = 0, mx = 0;
            for (;;) {
                vg_lm_seq_tokens st[S];
                int n = 0;
                for (int b = 0; b < S; b++) {
                    if (fed[b] >= TOTAL) continue;
                    int take = fed[b] < lens[b] ? lens[b] - fed[b] : 1;
                    if (chunks[ci] && take > chunks[ci]) take = chunks[ci];
                    st[n++] = (vg_lm_seq_tokens){id[b], toks[b] + fed[b], take};
                }
                if (!n) break;
                VG_CHECK(vg_lm_step(lm, st, n, logits, greedy, NULL));
                for (int i = 0; i < n; i++) {
                    int b = st[i].seq == id[0] ? 0 : 1;
                    fed[b] += st[i].num_tokens;
                    const double *want = ref[b] + (size_t)(fed[b] - 1) * m->vocab;
                    int best = 0;
                    for (int c = 0; c < m->vocab; c++) {
                        double d = fabs(logits[(size_t)i * m->vocab + c] - want[c]);
                        err = d > err ? d : err;
                        mx = fabs(want[c]) > mx ? fabs(want[c]) : mx;
                        if (logits[(size_t)i * m->vocab + c] > logits[(size_t)i * m->vocab + best]) best = c;
                    }
                    assert_int_equal(greedy[i], best);
                }
            }
            print_message("synthetic %s head_dim %d, %d/%d heads, vocab %d, %s, mode %s chunk %d: "
                          "relative error %.3g\n", m->type, m->head_dim, m->heads, m->kv_heads,
                          m->vocab, m->tied ? "tied" : "untied", vg_graph_mode_name(k_modes[mi]),
                          chunks[ci], err / mx);
            assert_true(err / mx <= f32_tol());
            VG_CHECK(vg_lm_free(lm));
        }
    for (int b = 0; b < S; b++) free(ref[b]);
    free(logits);
    char path[1100];
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    unlink(path);
    snprintf(path, sizeof path, "%s/config.json", dir);
    unlink(path);
    rmdir(dir);
}

static void test_other_shapes(void **state)
{
    (void)state;
    /* head_dim 48 with heads·head_dim ≠ hidden, one KV head, vocab 301, untied, padded MLP */
    synth a = {.type = "qwen2", .layers = 2, .hidden = 80, .heads = 3, .kv_heads = 1,
               .head_dim = 48, .inter = 100, .vocab = 301, .tied = 0, .rng = 1};
    check_synthetic(&a);
    synth_free(&a);
    /* Qwen3, head_dim 16, 4 heads over 2 KV heads, tied, vocab 77 */
    synth b = {.type = "qwen3", .layers = 3, .hidden = 40, .heads = 4, .kv_heads = 2,
               .head_dim = 16, .inter = 24, .vocab = 77, .tied = 1, .rng = 2};
    check_synthetic(&b);
    synth_free(&b);
}

/* Synthetic weights (for benchmarks): deterministic per seed, graph and eager agree. */
static void test_synthetic(void **state)
{
    (void)state;
    vg_lm *lm = NULL;
    VG_CHECK_FAILS(vg_lm_create_synthetic(g_dev.rt, "no-such-model", 1, VG_DTYPE_F32, NULL, &lm),
                   VG_ERR_NOT_FOUND, "no-such-model");
    float *out[2];
    const vg_graph_mode modes[2] = {VG_MODE_NONE, VG_MODE_FULL_AND_PIECEWISE};
    int32_t prompt[21];
    for (int i = 0; i < 21; i++) prompt[i] = (i * 97 + 3) % 512;
    for (int r = 0; r < 2; r++) {
        vg_lm_options o;
        vg_lm_options_init(&o);
        o.mode = modes[r];
        o.num_blocks = 8;
        o.max_seqs = 2;
        VG_CHECK(vg_lm_create_synthetic(g_dev.rt, "qwen2-tiny", 7, VG_DTYPE_F32, &o, &lm));
        vg_lm_info info;
        VG_CHECK(vg_lm_get_info(lm, &info));
        assert_int_equal(info.vocab, 512);
        assert_int_equal(info.num_blocks, 8);
        out[r] = malloc(6 * 512 * sizeof(float));
        int32_t id, tok;
        VG_CHECK(vg_lm_seq_add(lm, &id));
        vg_lm_seq_tokens st = {id, prompt, 21};
        VG_CHECK(vg_lm_step(lm, &st, 1, out[r], &tok, NULL));
        for (int j = 1; j < 6; j++) {
            if (j == 3) { /* new graph options mid-sequence: the KV cache and sequences stay */
                vg_lm_options bad = o;
                bad.mode = (vg_graph_mode)9;
                VG_CHECK_FAILS(vg_lm_reconfigure(lm, &bad), VG_ERR_INVALID_ARG, "reconfigure");
                VG_CHECK(vg_lm_reconfigure(lm, &o));
                assert_int_equal(vg_lm_seq_len(lm, id), 21 + 2);
            }
            st = (vg_lm_seq_tokens){id, &tok, 1};
            VG_CHECK(vg_lm_step(lm, &st, 1, out[r] + j * 512, &tok, NULL));
        }
        VG_CHECK(vg_lm_free(lm));
    }
    for (int i = 0; i < 6 * 512; i++) {
        assert_true(isfinite(out[0][i]));
        assert_true(fabsf(out[0][i] - out[1][i]) <= 1e-4f * (1 + fabsf(out[0][i])));
    }
    free(out[0]), free(out[1]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_config),
        cmocka_unit_test(test_eos),
        cmocka_unit_test(test_plan),
        cmocka_unit_test(test_load_errors),
        cmocka_unit_test(test_qwen2_prompts),
        cmocka_unit_test(test_qwen3_prompts),
        cmocka_unit_test(test_bf16_sharded),
        cmocka_unit_test(test_staggered),
        cmocka_unit_test(test_long_chunked),
        cmocka_unit_test(test_small_chunks),
        cmocka_unit_test(test_free_and_reuse),
        cmocka_unit_test(test_bad_inputs),
        cmocka_unit_test(test_other_shapes),
        cmocka_unit_test(test_synthetic),
    };
    return vg_model_test_main("language model", "lm", tests, &g_dev);
}
