/* SPDX-License-Identifier: Apache-2.0 */
/* vg lm generate: greedy decoding of every prompt as one batch. Each step feeds every sequence
 * still running: a prefill chunk (the whole prompt, or at most --prefill-chunk tokens of it) or
 * the token it generated last; so with --prefill-chunk, later steps mix prefill chunks with
 * decodes (PIECEWISE), and steps of decodes alone replay FULL graphs. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_args.h"
#include "cli_output.h"
#include "cli_progress.h"
#include "cli_safetensors.h"
#include "lm_input.h"
#include "lm_loop_cli.h"
#include "runner_stats_format.h"
#include "tp_launch.h"
#include "vg/vg_lm.h"
#include "vg/vg_safetensors.h"
#include "vg_cli.h"

#define CMD "lm generate"

static const char k_help[] =
    "usage: vg lm generate --model DIR (--prompt-ids 1,2,3[;4,5] | --input CASE.input.safetensors)\n"
    "           [--max-new-tokens N] [--output OUT.safetensors] [--backend B]\n"
    "           [--mode none|piecewise|full|full_and_piecewise] [--capture-sizes a,b,c]\n"
    "           [--max-capture-size N] [--prefill-chunk N] [--kv-blocks N] [--block-size N]\n"
    "           [--warmup] [--expected CASE.expected.safetensors [--tolerance REL]]\n"
    "           [--eos ID[,ID]] [--ignore-eos] [--stats] [--json] [--quiet] [--device-loop]\n"
    "           [--tp N]\n"
    "\n"
    "DIR is a Hugging Face model directory (config.json with model_type qwen2 or qwen3,\n"
    "model.safetensors or shards with model.safetensors.index.json). Prompts come from\n"
    "--prompt-ids (token ids separated by commas; prompts separated by ';') or from an input\n"
    "file with input_ids [T] (the prompts one after another), prompt_lens [B] and\n"
    "max_new_tokens [1], each I64 or I32 (--max-new-tokens, required with --prompt-ids,\n"
    "overrides it). Every prompt is decoded greedily, all of them as one batch, until it has N\n"
    "new tokens or its last one is an end-of-sequence (EOS) token, and the token ids are\n"
    "printed, one line per prompt. Each prompt's length plus N must fit in the model's\n"
    "max_position_embeddings (checked before the model is loaded).\n"
    "  --output OUT        per prompt b: sequence.b I64 [L_b + n_b] (the prompt and its n_b <= N\n"
    "                      generated tokens) and logits.b F32 [n_b, vocab] (row j: the logits\n"
    "                      token j was chosen from); OUT may not be the --input or --expected file\n"
    "                      nor a file of the model directory\n"
    "  --eos ID[,ID]       the EOS token ids (repeatable, at most 16 in all); default:\n"
    "                      eos_token_id of the model's generation_config.json, else of its\n"
    "                      config.json (an id or a list)\n"
    "  --ignore-eos        always generate N tokens\n"
    "  --mode M            graph mode (default full_and_piecewise: decode steps FULL, mixed\n"
    "                      steps PIECEWISE)\n"
    "  --capture-sizes L   token counts to capture (default 1, 2, 4, 8, then every 8 to 256)\n"
    "  --max-capture-size N  steps above N tokens run eagerly\n"
    "  --prefill-chunk N   prefill at most N tokens of a prompt per step\n"
    "  --kv-blocks N       KV pool size in blocks (default: what the prompts need)\n"
    "  --block-size N      tokens per KV block (default 16)\n"
    "  --warmup            capture every decode bucket before the first step\n"
    "  --expected REF      compare with a reference (the fixtures' sequence.b, logits.b,\n"
    "                      margin.b): greedy tokens up to the first near tie (margin below\n"
    "                      1e-3 x max|logit|), logits while the sequences agree\n"
    "  --tolerance REL     the largest relative error max|out - ref| / max|ref| accepted\n"
    "                      (default 1e-4 for F32, 5e-2 for BF16 and F16)\n"
    "  --stats             print the graph runner's statistics (steps FULL, PIECEWISE, eager)\n"
    "  --json              print the result as one JSON document\n"
    "  --quiet             no progress on stderr (shown only when stderr is a terminal)\n"
    "  --device-loop       once every prompt is in, the remaining tokens in one vg_lm_generate\n"
    "                      call with the same EOS ids: a device-side loop where the backend has\n"
    "                      one (one launch; CUDA 12.4 WHILE nodes), else the same steps as a host\n"
    "                      loop (logged)\n"
    "  --tp N              tensor parallelism over N ranks, one process per rank on device\n"
    "                      rank mod device count (docs/tensor-parallel.md); rank 0 prints the\n"
    "                      result; the backend needs communicators (cuda, kunlun_stub)\n"
    "When OUT is standard output (/dev/stdout), the text goes to stderr.\n"
    "Exit status: 0; 1 when an input, the run or the output failed (logits that are not finite\n"
    "included), or the result does not match --expected; 2 for a wrong command line.\n";

#define MAX_EOS_OPTIONS 16

typedef struct gen_args {
    const char *model, *input, *output, *backend, *mode_name, *sizes_text, *prompt_text, *expected;
    double tolerance;
    int64_t max_new; /* -1: from the input file */
    int chunk, block_size, stats, json, warmup, ignore_eos, quiet, device_loop, tp;
    int64_t kv_blocks;
    vg_lm_options opts;
    int64_t sizes[VG_CLI_MAX_CAPTURE_SIZES];
    const char *eos_items[MAX_EOS_OPTIONS];
    vg_opt_strings eos_text;
    int num_eos; /* the EOS ids in force */
    int32_t eos[VG_LM_MAX_EOS];
} gen_args;

typedef vg_lm_prompts prompts;

static int parse_args(int argc, char **argv, gen_args *a)
{
    vg_lm_options_init(&a->opts);
    a->max_new = -1;
    a->tolerance = -1;
    a->eos_text = (vg_opt_strings){a->eos_items, 0, MAX_EOS_OPTIONS};
    const vg_opt opts[] = {
        {"--model", VG_OPT_STRING, &a->model, 0, 0, "a model directory"},
        {"--input", VG_OPT_STRING, &a->input, 0, 0, "a safetensors file"},
        {"--prompt-ids", VG_OPT_STRING, &a->prompt_text, 0, 0, "token ids separated by commas"},
        {"--max-new-tokens", VG_OPT_I64, &a->max_new, 1, 1 << 30, NULL},
        {"--output", VG_OPT_STRING, &a->output, 0, 0, "a file to write"},
        {"--backend", VG_OPT_STRING, &a->backend, 0, 0, "a backend name or the path of a plugin .so"},
        {"--mode", VG_OPT_STRING, &a->mode_name, 0, 0, "none, piecewise, full or full_and_piecewise"},
        {"--capture-sizes", VG_OPT_STRING, &a->sizes_text, 0, 0, "positive integers separated by commas"},
        {"--max-capture-size", VG_OPT_I64, &a->opts.max_capture_size, 1, 1e15, NULL},
        {"--prefill-chunk", VG_OPT_INT, &a->chunk, 1, 1e9, NULL},
        {"--kv-blocks", VG_OPT_I64, &a->kv_blocks, 1, 2e9, NULL},
        {"--block-size", VG_OPT_INT, &a->block_size, 1, 4096, NULL},
        {"--warmup", VG_OPT_FLAG, &a->warmup, 0, 0, NULL},
        {"--expected", VG_OPT_STRING, &a->expected, 0, 0, "a safetensors file"},
        {"--tolerance", VG_OPT_DOUBLE, &a->tolerance, 0, 1, NULL},
        {"--stats", VG_OPT_FLAG, &a->stats, 0, 0, NULL},
        {"--json", VG_OPT_FLAG, &a->json, 0, 0, NULL},
        {"--eos", VG_OPT_STRINGS, &a->eos_text, 0, 0, "token ids separated by commas"},
        {"--ignore-eos", VG_OPT_FLAG, &a->ignore_eos, 0, 0, NULL},
        {"--quiet", VG_OPT_FLAG, &a->quiet, 0, 0, NULL},
        {"--device-loop", VG_OPT_FLAG, &a->device_loop, 0, 0, NULL},
        {"--tp", VG_OPT_INT, &a->tp, 1, 4096, NULL},
    };
    int rc = vg_opt_parse(CMD, k_help, opts, (int)(sizeof opts / sizeof opts[0]), argc, argv, 2);
    if (rc) return rc;
    if (a->mode_name && vg_graph_mode_parse(a->mode_name, &a->opts.mode) != VG_OK)
        return vg_cli_usage(CMD, "--mode: %s", vg_last_error());
    if (a->sizes_text) {
        rc = vg_capture_sizes_parse(CMD, a->sizes_text, a->sizes, &a->opts.num_capture_sizes);
        if (rc) return rc;
        a->opts.capture_sizes = a->sizes;
    }
    if (!a->model) return vg_cli_usage(CMD, "--model is required (see vg lm generate --help)");
    if (!a->input == !a->prompt_text)
        return vg_cli_usage(CMD, "give the prompts with --prompt-ids or --input (one of them)");
    if (a->prompt_text && a->max_new < 0)
        return vg_cli_usage(CMD, "--max-new-tokens is required with --prompt-ids");
    if (a->tolerance >= 0 && !a->expected) return vg_cli_usage(CMD, "--tolerance needs --expected");
    if (a->ignore_eos && a->eos_text.count) return vg_cli_usage(CMD, "give --eos or --ignore-eos, not both");
    a->opts.warmup = a->warmup;
    a->opts.block_size = a->block_size;
    return 0;
}

static int read_prompt_ids(const char *text, prompts *p)
{
    size_t len = strlen(text);
    p->ids = malloc((len / 2 + 1) * sizeof(int32_t));
    int64_t *tmp = malloc((len / 2 + 1) * sizeof(int64_t));
    p->lens = malloc((len / 2 + 1) * sizeof(int64_t));
    if (!p->ids || !tmp || !p->lens) {
        free(tmp);
        return vg_cli_fail(CMD, "out of memory");
    }
    int64_t total = 0;
    const char *s = text;
    const vg_int_list rule = {0, INT32_MAX, 0, (int)(len / 2 + 1), ';'};
    char why[96];
    for (;;) {
        const char *end = NULL;
        int n = vg_int_list_parse(s, &rule, tmp, &end, why, sizeof why);
        if (n < 0) {
            free(tmp);
            return vg_cli_usage(CMD, "--prompt-ids wants token ids (non-negative integers) separated "
                                     "by commas, prompts separated by ';', got '%s': prompt %d: %s",
                                text, p->B + 1, why);
        }
        for (int i = 0; i < n; i++) p->ids[total + i] = (int32_t)tmp[i];
        total += n;
        p->lens[p->B++] = n;
        if (*end != ';') break;
        s = end + 1;
    }
    free(tmp);
    if (p->B > VG_LM_MAX_PROMPTS) return vg_cli_usage(CMD, "at most %d prompts", VG_LM_MAX_PROMPTS);
    return 0;
}

/* The prompts of an input file (lm_input.c), every id inside the vocabulary. */
static int read_input(const char *path, int vocab, prompts *p)
{
    vg_st_file *f = NULL;
    int rc = vg_st_open(path, &f) != VG_OK || vg_lm_prompts_read(f, vocab, p) != VG_OK;
    if (rc) vg_cli_fail(CMD, "%s", vg_last_error());
    vg_st_close(f);
    return rc;
}

/* The state of one prompt while generating. */
typedef struct gen_seq {
    int32_t id;
    int64_t off, L, fed, made;
    int at_eos;     /* its last token is an EOS token: done */
    int32_t *out;   /* L + N tokens: prompt, then generated */
    float *logits;  /* N x vocab, kept for --output and --expected only (else NULL) */
} gen_seq;

/* Steps by the path they took: eager, FULL, PIECEWISE (vg_run_path). */
static int64_t g_path_steps[3];

static int is_eos(const gen_args *a, int32_t tok)
{
    for (int i = 0; i < a->num_eos; i++)
        if (a->eos[i] == tok) return 1;
    return 0;
}

/* -1 when the row is finite, else the index of its first NaN or infinity. */
static int first_non_finite(const float *row, int n)
{
    for (int v = 0; v < n; v++)
        if (!isfinite(row[v])) return v;
    return -1;
}

/* ---- --device-loop ---- */
static vg_lm_generate_info g_loop_info;

/* Once every prompt is in: the remaining tokens of every unfinished prompt in one vg_lm_generate
 * call with the EOS ids in force (0: not yet; 1: done, *rc set). */
static int device_loop_rest(const gen_args *a, const prompts *p, gen_seq *s, vg_lm *lm, int vocab,
                            int64_t *steps, int *rc)
{
    int B = p->B;
    for (int b = 0; b < B; b++)
        if (s[b].fed < s[b].L) return 0;
    int32_t *ids = malloc((size_t)B * sizeof *ids), *next = malloc((size_t)B * sizeof *next);
    int64_t *n = malloc((size_t)B * sizeof *n), *got = malloc((size_t)B * sizeof *got);
    int32_t **out = malloc((size_t)B * sizeof *out);
    float **lg = malloc((size_t)B * sizeof *lg);
    int keep = s[0].logits != NULL; /* logits kept for --output and --expected only */
    if (!ids || !next || !n || !got || !out || !lg) *rc = vg_cli_fail(CMD, "out of memory");
    for (int b = 0; !*rc && b < B; b++) {
        gen_seq *q = &s[b];
        ids[b] = q->id, next[b] = q->out[q->L + q->made - 1];
        n[b] = q->at_eos ? 0 : p->N - q->made; /* finished at its first token: nothing more */
        out[b] = q->out + q->L + q->made, lg[b] = keep ? q->logits + q->made * vocab : NULL;
    }
    if (!*rc)
        *rc = vg_cli_lm_generate_rest(CMD, lm, B, ids, next, n, a->eos, a->num_eos, out,
                                      keep ? lg : NULL, got, &g_loop_info);
    for (int b = 0; !*rc && b < B; b++) {
        gen_seq *q = &s[b];
        for (int64_t j = 0; j < got[b] && keep; j++) {
            const float *row = q->logits + (q->made + j) * vocab;
            int bad = first_non_finite(row, vocab);
            if (bad >= 0) {
                *rc = vg_cli_fail(CMD, "prompt %d, new token %lld: logit %d is %g; the model's output "
                                       "is not finite (its weights overflow in this computation): no "
                                       "token can be chosen", b, (long long)(q->made + j), bad, row[bad]);
                break;
            }
        }
        q->made += got[b];
        if (got[b]) q->at_eos = is_eos(a, q->out[q->L + q->made - 1]);
    }
    *steps += g_loop_info.steps;
    free(ids), free(next), free(n), free(got), free(out), free(lg);
    return 1;
}

static int generate(const gen_args *a, const prompts *p, gen_seq *s, vg_lm *lm, int vocab, int64_t *steps)
{
    int B = p->B;
    vg_lm_seq_tokens *st = malloc((size_t)B * sizeof *st);
    int *idx = malloc((size_t)B * sizeof(int));
    float *logits = malloc((size_t)B * (size_t)vocab * sizeof(float));
    int32_t *greedy = malloc((size_t)B * sizeof(int32_t));
    if (!st || !idx || !logits || !greedy) {
        free(st), free(idx), free(logits), free(greedy);
        return vg_cli_fail(CMD, "out of memory");
    }
    vg_progress progress;
    vg_progress_start(&progress, a->quiet);
    int rc = 0;
    int64_t most = 0; /* new tokens of the furthest prompt, for the progress line */
    for (*steps = 0; !rc; ++*steps) {
        if (a->device_loop && device_loop_rest(a, p, s, lm, vocab, steps, &rc)) break;
        int n = 0;
        for (int b = 0; b < B; b++) {
            gen_seq *q = &s[b];
            if (q->made == p->N || q->at_eos) continue;
            int64_t take = 1;
            if (q->fed < q->L) take = a->chunk && a->chunk < q->L - q->fed ? a->chunk : q->L - q->fed;
            st[n] = (vg_lm_seq_tokens){q->id, q->out + q->fed, (int32_t)take};
            idx[n++] = b;
        }
        if (!n) break;
        vg_progress_show(&progress, "lm generate: new tokens", (int)most, (int)p->N);
        vg_lm_step_info info;
        if (vg_lm_step(lm, st, n, logits, greedy, &info) != VG_OK) {
            rc = vg_cli_fail(CMD, "%s", vg_last_error());
            break;
        }
        g_path_steps[info.run.path]++;
        for (int i = 0; !rc && i < n; i++) {
            gen_seq *q = &s[idx[i]];
            q->fed += st[i].num_tokens;
            if (q->fed < q->L) continue; /* a prefill chunk before the prompt's end */
            const float *row = logits + (size_t)i * (size_t)vocab;
            int bad = first_non_finite(row, vocab);
            if (bad >= 0) { /* the inputs are token ids: a NaN or infinity comes from the model */
                rc = vg_cli_fail(CMD, "prompt %d, new token %lld: logit %d is %g; the model's output is "
                                      "not finite (its weights overflow in this computation): no token "
                                      "can be chosen", idx[i], (long long)q->made, bad, row[bad]);
                break;
            }
            if (q->logits) memcpy(q->logits + q->made * vocab, row, (size_t)vocab * sizeof(float));
            q->out[q->L + q->made++] = greedy[i];
            q->at_eos = is_eos(a, greedy[i]);
            if (q->made > most) most = q->made;
        }
    }
    vg_progress_end(&progress);
    free(st), free(idx), free(logits), free(greedy);
    return rc;
}

static int write_output(const gen_args *a, const prompts *p, const gen_seq *s, int vocab)
{
    int B = p->B, rc = 0;
    vg_st_write_tensor *t = calloc((size_t)2 * B, sizeof *t);
    char (*names)[32] = calloc((size_t)2 * B, 32);
    int64_t (*shapes)[2] = calloc((size_t)2 * B, sizeof *shapes);
    int64_t **seq64 = calloc((size_t)B, sizeof *seq64);
    if (!t || !names || !shapes || !seq64) rc = vg_cli_fail(CMD, "out of memory");
    for (int b = 0; !rc && b < B; b++) {
        int64_t L = s[b].L + s[b].made;
        seq64[b] = malloc((size_t)L * sizeof(int64_t));
        if (!seq64[b]) {
            rc = vg_cli_fail(CMD, "out of memory");
            break;
        }
        for (int64_t i = 0; i < L; i++) seq64[b][i] = s[b].out[i];
        snprintf(names[2 * b], 32, "sequence.%d", b);
        shapes[2 * b][0] = L;
        t[2 * b] = (vg_st_write_tensor){names[2 * b], VG_DTYPE_I64, 1, shapes[2 * b], seq64[b]};
        snprintf(names[2 * b + 1], 32, "logits.%d", b);
        shapes[2 * b + 1][0] = s[b].made, shapes[2 * b + 1][1] = vocab;
        t[2 * b + 1] = (vg_st_write_tensor){names[2 * b + 1], VG_DTYPE_F32, 2, shapes[2 * b + 1], s[b].logits};
    }
    if (!rc) rc = vg_cli_write_safetensors(CMD, a->output, t, 2 * B);
    for (int b = 0; seq64 && b < B; b++) free(seq64[b]);
    free(seq64), free(t), free(names), free(shapes);
    return rc;
}

static const vg_st_tensor *find_ref(vg_st_file *f, const char *what, int b, vg_dtype dt, int64_t rows,
                                    int64_t cols)
{
    char nm[48];
    snprintf(nm, sizeof nm, "%s.%d", what, b);
    const vg_st_tensor *t = vg_st_find(f, nm);
    if (!t || t->dtype != dt || t->shape[0] < rows || (cols && (t->ndim != 2 || t->shape[1] != cols))) {
        vg_cli_fail(CMD, "%s: tensor '%s' is missing or not %s [>= %lld%s]", vg_st_path(f), nm,
                    vg_dtype_name(dt), (long long)rows, cols ? ", vocab" : "");
        return NULL;
    }
    return t;
}

static float ref_f32(const vg_st_tensor *t, int64_t i)
{
    float v;
    memcpy(&v, (const char *)t->data + 4 * i, 4);
    return v;
}

/* Greedy tokens up to the first near tie, logits while the sequences agree. */
static int compare(const gen_args *a, const prompts *p, const gen_seq *s, int vocab, vg_dtype dt,
                   cJSON *json)
{
    vg_st_file *f = NULL;
    if (vg_st_open(a->expected, &f) != VG_OK) return vg_cli_fail(CMD, "%s", vg_last_error());
    double tol = a->tolerance >= 0 ? a->tolerance : dt == VG_DTYPE_F32 ? 1e-4 : 5e-2;
    int rc = 0, bad = 0;
    cJSON *arr = json ? cJSON_AddArrayToObject(json, "expected") : NULL;
    for (int b = 0; !rc && b < p->B; b++) {
        const gen_seq *q = &s[b];
        const vg_st_tensor *seq = find_ref(f, "sequence", b, VG_DTYPE_I64, q->L + q->made, 0);
        const vg_st_tensor *lg = seq ? find_ref(f, "logits", b, VG_DTYPE_F32, q->L + q->made - 1, vocab) : NULL;
        const vg_st_tensor *mg = lg ? find_ref(f, "margin", b, VG_DTYPE_F32, q->L + q->made - 1, 0) : NULL;
        if (!mg) {
            rc = 1;
            break;
        }
        int64_t agree = 0, tie = -1, mismatch = -1;
        double err = 0, refmax = 0;
        for (int64_t j = 0; j < q->made; j++) {
            int64_t row = q->L - 1 + j;
            double mx = 0;
            for (int v = 0; v < vocab; v++) {
                double r = ref_f32(lg, row * vocab + v), d = q->logits[j * vocab + v] - r;
                err = fabs(d) > err ? fabs(d) : err;
                refmax = fabs(r) > refmax ? fabs(r) : refmax;
                mx = fabs(r) > mx ? fabs(r) : mx;
            }
            if (tie < 0 && ref_f32(mg, row) < 1e-3 * mx) tie = j;
            int64_t want;
            memcpy(&want, (const char *)seq->data + 8 * (q->L + j), 8);
            if (want != q->out[q->L + j]) {
                if (tie < 0) mismatch = j;
                break; /* the sequences part: later logits are not comparable */
            }
            agree = j + 1;
        }
        double rel = err / (refmax > 0 ? refmax : 1);
        int ok = mismatch < 0 && rel <= tol;
        bad |= !ok;
        if (arr) {
            cJSON *o = cJSON_CreateObject();
            cJSON_AddNumberToObject(o, "tokens_agree", (double)agree);
            cJSON_AddNumberToObject(o, "near_tie_at", (double)tie);
            cJSON_AddNumberToObject(o, "relative_error", rel);
            cJSON_AddBoolToObject(o, "within", ok);
            cJSON_AddItemToArray(arr, o);
        } else {
            printf("prompt %d: %lld of %lld tokens agree", b, (long long)agree, (long long)q->made);
            if (tie >= 0) printf(" (near tie at token %lld)", (long long)tie);
            if (mismatch >= 0) printf(", token %lld DIFFERS before any near tie", (long long)mismatch);
            printf("; logits relative error %.3g (tolerance %.3g)%s\n", rel, tol, ok ? "" : ": NOT within");
        }
    }
    vg_st_close(f);
    if (!rc && bad) rc = 2; /* reported after the summary */
    return rc;
}

static int report(const gen_args *a, const prompts *p, const gen_seq *s, vg_lm *lm, vg_runtime *rt,
                  int64_t steps, const vg_lm_info *info)
{
    int cmp = 0;
    if (a->json) {
        cJSON *j = cJSON_CreateObject();
        cJSON_AddStringToObject(j, "backend", vg_runtime_backend_name(rt));
        cJSON_AddStringToObject(j, "mode", vg_graph_mode_name(vg_runner_mode(vg_lm_runner(lm))));
        cJSON_AddNumberToObject(j, "prompts", p->B);
        cJSON_AddNumberToObject(j, "new_tokens", (double)p->N);
        cJSON_AddNumberToObject(j, "steps", (double)steps);
        cJSON_AddNumberToObject(j, "steps_full", (double)g_path_steps[VG_RUN_FULL]);
        cJSON_AddNumberToObject(j, "steps_piecewise", (double)g_path_steps[VG_RUN_PIECEWISE]);
        cJSON_AddNumberToObject(j, "steps_eager", (double)g_path_steps[VG_RUN_EAGER]);
        cJSON *eos = cJSON_AddArrayToObject(j, "eos");
        for (int i = 0; i < a->num_eos; i++) cJSON_AddItemToArray(eos, cJSON_CreateNumber(a->eos[i]));
        cJSON *seqs = cJSON_AddArrayToObject(j, "generated"), *ends = cJSON_AddArrayToObject(j, "stopped_at_eos");
        for (int b = 0; b < p->B; b++) {
            cJSON *row = cJSON_CreateArray();
            for (int64_t i = 0; i < s[b].made; i++) cJSON_AddItemToArray(row, cJSON_CreateNumber(s[b].out[s[b].L + i]));
            cJSON_AddItemToArray(seqs, row);
            cJSON_AddItemToArray(ends, cJSON_CreateBool(s[b].at_eos));
        }
        if (a->output) cJSON_AddStringToObject(j, "output", a->output);
        if (a->stats) cJSON_AddItemToObject(j, "stats", vg_stats_json(vg_lm_runner(lm)));
        if (a->expected) cmp = compare(a, p, s, info->vocab, info->compute_dtype, j);
        if (cmp == 1) {
            cJSON_Delete(j);
            return 1;
        }
        int rc = vg_cli_print_json(j, 0);
        return rc ? rc : cmp ? vg_cli_fail(CMD, "the result does NOT match %s", a->expected) : 0;
    }
    for (int b = 0; b < p->B; b++) {
        printf("%d:", b);
        for (int64_t i = 0; i < s[b].made; i++) printf("%s%d", i ? "," : " ", s[b].out[s[b].L + i]);
        putchar('\n');
    }
    if (a->expected && (cmp = compare(a, p, s, info->vocab, info->compute_dtype, NULL)) == 1) return 1;
    if (a->stats) {
        printf("backend %s, %d prompt(s), %lld new token(s) each at most, %lld step(s): %lld FULL, "
               "%lld PIECEWISE, %lld eager\n", vg_runtime_backend_name(rt), p->B, (long long)p->N,
               (long long)steps, (long long)g_path_steps[VG_RUN_FULL],
               (long long)g_path_steps[VG_RUN_PIECEWISE], (long long)g_path_steps[VG_RUN_EAGER]);
        if (a->device_loop) /* --device-loop */
            printf("device loop: %s%s, %lld step(s) in %d launch(es), %d read-back(s)\n",
                   g_loop_info.device_loop ? "on the device" : "host loop: ", g_loop_info.fallback,
                   (long long)g_loop_info.steps, g_loop_info.launches, g_loop_info.readbacks);
        if (vg_stats_print(stdout, vg_lm_runner(lm))) return 1;
    }
    return cmp ? vg_cli_fail(CMD, "the result does NOT match %s", a->expected) : 0;
}

/* The command in this process: the whole of it, or rank tr's part (tr NULL: no tensor
 * parallelism), which only rank 0 reports. */
static int run(gen_args *a, prompts *p, int64_t blocks, const vg_tp_rank *tr)
{
    int B = p->B;
    a->opts.num_blocks = a->kv_blocks ? a->kv_blocks : blocks;
    a->opts.max_seqs = B;
    vg_runtime_options ro;
    vg_runtime_options_init(&ro);
    ro.backend = a->backend;
    vg_runtime *rt = NULL;
    vg_comm *comm = NULL;
    vg_lm *lm = NULL;
    int quiet_rank = tr && tr->rank != 0;
    if (quiet_rank) a->quiet = 1;
    gen_seq *s = calloc((size_t)B, sizeof *s);
    int rc = s ? 0 : vg_cli_fail(CMD, "out of memory");
    if (!rc && tr) rc = vg_tp_open(CMD, tr, a->backend, &rt, &comm);
    a->opts.comm = comm;
    if (!rc && ((!rt && vg_runtime_open(&ro, &rt) != VG_OK) || vg_lm_load(rt, a->model, &a->opts, &lm) != VG_OK))
        rc = tr ? vg_cli_fail(CMD, "rank %d: %s", tr->rank, vg_last_error())
                : vg_cli_fail(CMD, "%s", vg_last_error());
    vg_lm_info info = {0};
    if (!rc) vg_lm_get_info(lm, &info);
    int keep_logits = a->output || a->expected;
    int64_t off = 0;
    for (int b = 0; !rc && b < B; b++) {
        s[b].L = p->lens[b], s[b].off = off;
        s[b].out = malloc((size_t)(p->lens[b] + p->N) * sizeof(int32_t));
        s[b].logits = keep_logits ? malloc((size_t)p->N * (size_t)info.vocab * sizeof(float)) : NULL;
        if (!s[b].out || (keep_logits && !s[b].logits))
            rc = vg_cli_fail(CMD, "out of memory (prompt %d: %lld tokens%s)", b, (long long)(p->lens[b] + p->N),
                             keep_logits ? " and their logits" : "");
        else memcpy(s[b].out, p->ids + off, (size_t)p->lens[b] * sizeof(int32_t));
        off += p->lens[b];
        if (!rc && vg_lm_seq_add(lm, &s[b].id) != VG_OK) rc = vg_cli_fail(CMD, "%s", vg_last_error());
    }
    int64_t steps = 0;
    if (!rc) rc = generate(a, p, s, lm, info.vocab, &steps);
    if (!rc && a->output && !quiet_rank) rc = write_output(a, p, s, info.vocab);
    if (!rc && a->output && !quiet_rank) vg_out_divert_stdout(a->output); /* the text after the binary: stderr */
    if (!rc && !quiet_rank) rc = report(a, p, s, lm, rt, steps, &info);
    for (int b = 0; s && b < B; b++) free(s[b].out), free(s[b].logits);
    free(s);
    vg_lm_free(lm);
    vg_comm_destroy(comm);
    vg_runtime_close(rt);
    return rc;
}

static int check_prompt_ids(const prompts *p, int vocab)
{
    int64_t off = 0;
    for (int b = 0; b < p->B; off += p->lens[b++])
        for (int64_t i = 0; i < p->lens[b]; i++)
            if (p->ids[off + i] >= vocab)
                return vg_cli_usage(CMD, "--prompt-ids: token %lld of prompt %d is %d, outside the "
                                         "vocabulary [0, %d)", (long long)i, b, p->ids[off + i], vocab);
    return 0;
}

/* The EOS ids in force: --eos, else the model's; none with --ignore-eos. 0, or 2 after the
 * message. */
static int pick_eos(gen_args *a, const vg_lm_info *info)
{
    if (a->ignore_eos) return 0;
    if (!a->eos_text.count) {
        a->num_eos = info->num_eos;
        memcpy(a->eos, info->eos_ids, (size_t)info->num_eos * sizeof(int32_t));
        return 0;
    }
    for (int i = 0; i < a->eos_text.count; i++) {
        int64_t ids[VG_LM_MAX_EOS];
        const vg_int_list rule = {0, INT32_MAX, 0, VG_LM_MAX_EOS - a->num_eos, 0};
        char why[96];
        int n = rule.max > 0 ? vg_int_list_parse(a->eos_text.items[i], &rule, ids, NULL, why, sizeof why) : -1;
        if (n < 0)
            return vg_cli_usage(CMD, "--eos wants token ids separated by commas, at most %d in all, got "
                                     "'%s': %s", VG_LM_MAX_EOS, a->eos_text.items[i],
                                rule.max > 0 ? why : "too many ids");
        for (int k = 0; k < n; k++) {
            if (ids[k] >= info->vocab)
                return vg_cli_usage(CMD, "--eos %lld is outside the vocabulary [0, %d)", (long long)ids[k],
                                    info->vocab);
            a->eos[a->num_eos++] = (int32_t)ids[k];
        }
    }
    return 0;
}

/* A reference F32 tensor holds only finite values (a NaN would drop out of the maximum error
 * and pass any tolerance): 1, or 0 after the message. */
static int ref_finite(const vg_st_file *f, const vg_st_tensor *t)
{
    for (uint64_t i = 0; t && i < t->numel; i++) {
        float v = ref_f32(t, (int64_t)i);
        if (!isfinite(v)) {
            vg_cli_fail(CMD, "%s: '%s' element %llu is %g: a reference must be finite", vg_st_path(f), t->name,
                        (unsigned long long)i, (double)v);
            return 0;
        }
    }
    return t != NULL;
}

/* --expected, before the compute: the file opens and holds every prompt's sequence.b, logits.b and
 * margin.b, long enough for at least one new token (compare checks the lengths generated), the
 * last two finite. 0, or 1 after the message. */
static int check_expected(const gen_args *a, const prompts *p, int vocab)
{
    vg_st_file *f = NULL;
    if (vg_st_open(a->expected, &f) != VG_OK) return vg_cli_fail(CMD, "%s", vg_last_error());
    int ok = 1;
    for (int b = 0; ok && b < p->B; b++)
        ok = find_ref(f, "sequence", b, VG_DTYPE_I64, p->lens[b] + 1, 0) &&
             ref_finite(f, find_ref(f, "logits", b, VG_DTYPE_F32, p->lens[b], vocab)) &&
             ref_finite(f, find_ref(f, "margin", b, VG_DTYPE_F32, p->lens[b], 0));
    vg_st_close(f);
    return !ok;
}

/* Every prompt and N new tokens fit in max_position_embeddings, and the KV pool holds them all:
 * checked before the model is loaded, naming the user's numbers. *blocks: what the prompts
 * need. 0, or 1 (the input file's max_new_tokens) or 2 (--max-new-tokens, --kv-blocks) after
 * the message. */
static int check_lengths(const gen_args *a, const prompts *p, const vg_lm_info *info, int64_t *blocks)
{
    int usage = a->max_new > 0;
    char from[4200];
    if (usage) snprintf(from, sizeof from, "--max-new-tokens %lld", (long long)p->N);
    else snprintf(from, sizeof from, "max_new_tokens %lld of %s", (long long)p->N, a->input);
    int bs = a->block_size ? a->block_size : 16;
    *blocks = 0;
    for (int b = 0; b < p->B; b++) {
        int64_t L = p->lens[b], room = info->max_position - L;
        if (p->N > room) {
            int (*say)(const char *, const char *, ...) = usage ? vg_cli_usage : vg_cli_fail;
            if (room < 1)
                return say(CMD, "prompt %d has %lld tokens: no room for a new token within the model's "
                                "max_position_embeddings %lld", b, (long long)L, (long long)info->max_position);
            char total[48]; /* L + N, which may not fit in 64 bits */
            if (p->N <= INT64_MAX - L) snprintf(total, sizeof total, "%lld", (long long)(L + p->N));
            else snprintf(total, sizeof total, "over %lld", (long long)INT64_MAX);
            return say(CMD, "prompt %d has %lld tokens; with %s that makes %s, more than the model's "
                            "max_position_embeddings %lld: at most %lld new tokens fit", b, (long long)L, from,
                       total, (long long)info->max_position, (long long)room);
        }
        *blocks += (L + p->N + bs - 1) / bs; /* L + N <= max_position: no overflow */
    }
    if (a->kv_blocks && a->kv_blocks < *blocks)
        return vg_cli_usage(CMD, "the %d prompt(s) and %s need %lld KV blocks of %d tokens; --kv-blocks "
                                 "gives %lld", p->B, from, (long long)*blocks, bs, (long long)a->kv_blocks);
    return 0;
}

int vg_cmd_lm_generate(int argc, char **argv)
{
    gen_args a;
    memset(&a, 0, sizeof a);
    int rc = parse_args(argc, argv, &a);
    if (rc) return rc == VG_OPT_HELP ? 0 : rc;
    prompts p = {0};
    vg_lm_info info;
    int64_t blocks = 0;
    if (a.prompt_text) rc = read_prompt_ids(a.prompt_text, &p);
    /* the model's shape and limits from its config files: the request is checked against them
     * before anything heavy */
    if (!rc && vg_lm_inspect(a.model, &info) != VG_OK) rc = vg_cli_fail(CMD, "%s", vg_last_error());
    if (!rc && a.input) rc = read_input(a.input, info.vocab, &p);
    if (!rc && a.prompt_text) rc = check_prompt_ids(&p, info.vocab);
    if (!rc && a.max_new > 0) p.N = a.max_new;
    if (!rc && p.N < 1)
        rc = vg_cli_usage(CMD, "%s holds no max_new_tokens: give --max-new-tokens", a.input);
    if (!rc) rc = pick_eos(&a, &info);
    if (!rc) rc = check_lengths(&a, &p, &info, &blocks);
    if (!rc && a.output) rc = vg_out_check_result(CMD, a.output, a.model, a.input, a.expected);
    if (!rc && a.expected) rc = check_expected(&a, &p, info.vocab);
    vg_tp_rank tr;
    int is_rank = 0;
    if (!rc && (is_rank = vg_tp_rank_from_env(CMD, a.tp, &tr)) == 2) rc = 2;
    if (!rc && a.tp > 1 && !is_rank) rc = vg_tp_launch(CMD, a.tp, a.backend, &info, argc, argv);
    else if (!rc) rc = run(&a, &p, blocks, is_rank ? &tr : NULL);
    vg_lm_prompts_free(&p);
    return rc;
}
