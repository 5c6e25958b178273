/* SPDX-License-Identifier: Apache-2.0 */
/* vg lm bench: decode latency of a language model with synthetic weights, eager against graphs,
 * per batch size. Each batch size: the prompts are prefilled (one step per sequence), then
 * --new decode steps are timed (host wall clock of vg_lm_step, which waits for its logits). */
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_args.h"
#include "vg/vg_lm.h"
#include "vg_cli.h"

#define CMD "lm bench"

static const char k_help[] =
    "usage: vg lm bench --config qwen2.5-0.5b|qwen3-0.6b|qwen2-tiny|CONFIG.json [--dtype bf16|f16|f32]\n"
    "           [--batch 1,16,64] [--prompt 512] [--new 64] [--block-size 16] [--backend B] [--json]\n"
    "\n"
    "Synthetic weights (deterministic, no files). Per batch size: every sequence prefills a\n"
    "prompt of --prompt tokens, then --new decode steps of the whole batch are timed, once eagerly\n"
    "(mode none) and once with graphs (full_and_piecewise: decode steps replay FULL graphs; the\n"
    "first steps of a bucket capture and are not timed). Reports ms per decode step, tokens/s,\n"
    "the speed-up, capture time and graph memory.\n";

typedef struct bench_args {
    const char *config, *dtype_name, *batch_text, *backend;
    int prompt, new_tokens, block_size, json;
    int64_t batch[64];
    int nbatch;
} bench_args;

typedef struct bench_row {
    int64_t batch;
    double eager_ms, graph_ms, capture_ms;
    uint64_t graph_bytes;
} bench_row;

static int parse(int argc, char **argv, bench_args *a)
{
    a->dtype_name = "bf16", a->batch_text = "1,16,64", a->prompt = 512, a->new_tokens = 64;
    const vg_opt opts[] = {
        {"--config", VG_OPT_STRING, &a->config, 0, 0, "a configuration name or a config.json"},
        {"--dtype", VG_OPT_STRING, &a->dtype_name, 0, 0, "bf16, f16 or f32"},
        {"--batch", VG_OPT_STRING, &a->batch_text, 0, 0, "batch sizes separated by commas"},
        {"--prompt", VG_OPT_INT, &a->prompt, 1, 1 << 20, NULL},
        {"--new", VG_OPT_INT, &a->new_tokens, 1, 1 << 20, NULL},
        {"--block-size", VG_OPT_INT, &a->block_size, 1, 4096, NULL},
        {"--backend", VG_OPT_STRING, &a->backend, 0, 0, "a backend name or the path of a plugin .so"},
        {"--json", VG_OPT_FLAG, &a->json, 0, 0, NULL},
    };
    int rc = vg_opt_parse(CMD, k_help, opts, (int)(sizeof opts / sizeof opts[0]), argc, argv, 2);
    if (rc) return rc;
    if (!a->config) return vg_cli_usage(CMD, "--config is required (see vg lm bench --help)");
    const char *p = a->batch_text;
    while (*p) {
        char *end = NULL;
        errno = 0;
        long long v = strtoll(p, &end, 10);
        if (errno || end == p || v < 1 || v > 4096 || a->nbatch == 64 || (*end && *end != ','))
            return vg_cli_usage(CMD, "--batch wants up to 64 sizes in 1..4096 separated by commas, "
                                     "got '%s'", a->batch_text);
        a->batch[a->nbatch++] = v;
        p = *end ? end + 1 : end;
    }
    if (!a->nbatch) return vg_cli_usage(CMD, "--batch is empty");
    return 0;
}

/* Prefill b sequences, then time `steps` decode steps; *ms per step. */
static vg_status run_batch(vg_lm *lm, int64_t b, int prompt, int steps, int vocab, int32_t *ids,
                           int32_t *toks, float *logits_unused, double *ms)
{
    (void)logits_unused;
    vg_status st = VG_OK;
    int64_t added = 0;
    int32_t *prompt_ids = malloc((size_t)prompt * sizeof(int32_t));
    vg_lm_seq_tokens *s = malloc((size_t)b * sizeof *s);
    if (!prompt_ids || !s) st = vg_error_set(VG_ERR_OUT_OF_MEMORY, "out of memory");
    for (int i = 0; st == VG_OK && i < prompt; i++) prompt_ids[i] = (int32_t)((i * 7919 + 13) % vocab);
    for (; st == VG_OK && added < b; added++) {
        st = vg_lm_seq_add(lm, &ids[added]);
        if (st != VG_OK) break;
        vg_lm_seq_tokens one = {ids[added], prompt_ids, prompt};
        st = vg_lm_step(lm, &one, 1, NULL, &toks[added], NULL);
    }
    /* two untimed decode steps: the bucket's eager first call and its capture */
    *ms = 0;
    for (int j = -2; st == VG_OK && j < steps; j++) {
        for (int64_t i = 0; i < b; i++) s[i] = (vg_lm_seq_tokens){ids[i], &toks[i], 1};
        vg_lm_step_info info;
        st = vg_lm_step(lm, s, (int)b, NULL, toks, &info);
        if (j >= 0) *ms += info.total_ms;
    }
    *ms /= steps;
    for (int64_t i = 0; i < added; i++) vg_lm_seq_free(lm, ids[i]);
    free(prompt_ids);
    free(s);
    return st;
}

int vg_cmd_lm_bench(int argc, char **argv)
{
    bench_args a;
    memset(&a, 0, sizeof a);
    int rc = parse(argc, argv, &a);
    if (rc) return rc == VG_OPT_HELP ? 0 : rc;
    vg_dtype dt = strcmp(a.dtype_name, "f32") == 0    ? VG_DTYPE_F32
                  : strcmp(a.dtype_name, "f16") == 0  ? VG_DTYPE_F16
                  : strcmp(a.dtype_name, "bf16") == 0 ? VG_DTYPE_BF16
                                                      : VG_DTYPE_COUNT_;
    if (dt == VG_DTYPE_COUNT_) return vg_cli_usage(CMD, "--dtype is bf16, f16 or f32, not '%s'", a.dtype_name);
    int64_t maxb = 0;
    for (int i = 0; i < a.nbatch; i++) maxb = a.batch[i] > maxb ? a.batch[i] : maxb;
    int bs = a.block_size ? a.block_size : 16;
    int64_t len = (int64_t)a.prompt + a.new_tokens + 2;
    vg_lm_options o;
    vg_lm_options_init(&o);
    o.mode = VG_MODE_NONE;
    o.block_size = bs;
    o.max_seqs = (int)maxb;
    o.num_blocks = maxb * ((len + bs - 1) / bs);
    o.max_seq_len = len;
    vg_runtime_options ro;
    vg_runtime_options_init(&ro);
    ro.backend = a.backend;
    vg_runtime *rt = NULL;
    vg_lm *lm = NULL;
    if (vg_runtime_open(&ro, &rt) != VG_OK || vg_lm_create_synthetic(rt, a.config, 1, dt, &o, &lm) != VG_OK) {
        rc = vg_cli_fail(CMD, "%s", vg_last_error());
        vg_runtime_close(rt);
        return rc;
    }
    vg_lm_info info;
    vg_lm_get_info(lm, &info);
    int32_t *ids = malloc((size_t)maxb * sizeof(int32_t)), *toks = malloc((size_t)maxb * sizeof(int32_t));
    bench_row *rows = calloc((size_t)a.nbatch, sizeof *rows);
    if (!ids || !toks || !rows) rc = vg_cli_fail(CMD, "out of memory");
    for (int i = 0; !rc && i < a.nbatch; i++) {
        bench_row *r = &rows[i];
        r->batch = a.batch[i];
        for (int g = 0; !rc && g < 2; g++) {
            o.mode = g ? VG_MODE_FULL_AND_PIECEWISE : VG_MODE_NONE;
            double ms = 0;
            if (vg_lm_reconfigure(lm, &o) != VG_OK ||
                run_batch(lm, r->batch, a.prompt, a.new_tokens, info.vocab, ids, toks, NULL, &ms) != VG_OK) {
                rc = vg_cli_fail(CMD, "batch %lld: %s", (long long)r->batch, vg_last_error());
                break;
            }
            if (g) {
                r->graph_ms = ms;
                vg_bucket_stats total;
                vg_runner_stats(vg_lm_runner(lm), NULL, 0, &total);
                r->capture_ms = total.capture_ms;
                r->graph_bytes = total.graph_bytes;
            } else {
                r->eager_ms = ms;
            }
        }
    }
    if (!rc && a.json) {
        cJSON *j = cJSON_CreateObject(), *arr;
        cJSON_AddStringToObject(j, "backend", vg_runtime_backend_name(rt));
        cJSON_AddStringToObject(j, "config", a.config);
        cJSON_AddStringToObject(j, "dtype", vg_dtype_name(dt));
        cJSON_AddNumberToObject(j, "prompt", a.prompt);
        cJSON_AddNumberToObject(j, "new", a.new_tokens);
        arr = cJSON_AddArrayToObject(j, "batches");
        for (int i = 0; i < a.nbatch; i++) {
            cJSON *e = cJSON_CreateObject();
            cJSON_AddNumberToObject(e, "batch", (double)rows[i].batch);
            cJSON_AddNumberToObject(e, "eager_ms_per_step", rows[i].eager_ms);
            cJSON_AddNumberToObject(e, "graph_ms_per_step", rows[i].graph_ms);
            cJSON_AddNumberToObject(e, "graph_tokens_per_s", rows[i].batch * 1e3 / rows[i].graph_ms);
            cJSON_AddNumberToObject(e, "capture_ms", rows[i].capture_ms);
            cJSON_AddNumberToObject(e, "graph_bytes", (double)rows[i].graph_bytes);
            cJSON_AddItemToArray(arr, e);
        }
        rc = vg_cli_print_json(j, 0);
    } else if (!rc) {
        char buf[32];
        printf("backend %s, %s (%d layers, hidden %d, vocab %d) %s, prompt %d, %d decode steps\n",
               vg_runtime_backend_name(rt), a.config, info.layers, info.hidden, info.vocab,
               vg_dtype_name(dt), a.prompt, a.new_tokens);
        printf("  batch   eager ms/step   graph ms/step   graph tok/s   speed-up   capture ms   graph memory\n");
        for (int i = 0; i < a.nbatch; i++)
            printf("  %5lld   %13.3f   %13.3f   %11.1f   %7.2fx   %10.2f   %12s\n", (long long)rows[i].batch,
                   rows[i].eager_ms, rows[i].graph_ms, rows[i].batch * 1e3 / rows[i].graph_ms,
                   rows[i].eager_ms / rows[i].graph_ms, rows[i].capture_ms,
                   vg_cli_bytes(rows[i].graph_bytes, buf, sizeof buf));
    }
    free(ids), free(toks), free(rows);
    vg_lm_free(lm);
    vg_runtime_close(rt);
    return rc;
}
