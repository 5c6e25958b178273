/* SPDX-License-Identifier: Apache-2.0 */
/* vg lm bench: decode latency of a language model with synthetic weights, eager against graphs,
 * per batch size. Each batch size: the prompts are prefilled (one step per sequence), then
 * --new decode steps are timed (host wall clock of vg_lm_step, which waits for its logits).
 * With --peer, the JSON lines of the PyTorch peer (tools/peer/peer_lm_torch.py, run in the same
 * device call) are read first and printed beside vg's numbers with the ratios. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli_args.h"
#include "cli_progress.h"
#include "lm_bench_peer.h"
#include "lm_loop_cli.h"
#include "tp_launch.h"
#include "vg/vg_lm.h"
#include "vg_cli.h"

#define CMD "lm bench"

static const char k_help[] =
    "usage: vg lm bench --config qwen2.5-0.5b|qwen3-0.6b|qwen2-tiny|CONFIG.json [--dtype bf16|f16|f32]\n"
    "           [--batch 1,16,64] [--prompt 512] [--new 64] [--block-size 16] [--backend B]\n"
    "           [--peer PEER.jsonl] [--pieces] [--loop] [--json] [--quiet] [--tp N]\n"
    "\n"
    "Synthetic weights (deterministic, no files). Per batch size: every sequence prefills a\n"
    "prompt of --prompt tokens, then --new decode steps of the whole batch are timed, once eagerly\n"
    "(mode none) and once with graphs (full_and_piecewise: decode steps replay FULL graphs; the\n"
    "first steps of a bucket capture and are not timed). Reports ms per decode step, tokens/s,\n"
    "the speed-up, capture time and graph memory.\n"
    "\n"
    "  --peer FILE    the JSON lines of a PyTorch peer, measured in the same device call: the\n"
    "                 fast one (one compiled step in one CUDA graph: \"B\", \"step_ms\",\n"
    "                 \"device_ms\") or tools/peer/peer_lm_torch.py's (\"B\", \"eager_ms_per_step\",\n"
    "                 \"static_compiled_ms_per_step\"); its ms per step and vg's speed-up over it,\n"
    "                 per batch size\n"
    "  --pieces       a third, eager run with device events around every piece of a step: the\n"
    "                 device time per step of each piece (embed, attn_in, attention, attn_out_mlp,\n"
    "                 head), summed over the layers (each event pair adds a little)\n"
    "  --loop         also generate --new tokens per sequence with vg_lm_generate, as a host loop\n"
    "                 and as a device-side loop (one launch: CUDA WHILE nodes), tokens/s of each\n"
    "  --quiet        no progress on stderr (shown only when stderr is a terminal)\n"
    "  --tp N         tensor parallelism over N ranks, one process per rank (as vg lm generate\n"
    "                 --tp); rank 0 reports, with the step's collectives alone (2 x layers\n"
    "                 all-reduces and the head's all-gather, in one graph, replayed) and their\n"
    "                 share of the graph step\n"
    "Defaults: BF16, batches 1,16,64 (1..4096 each, at most 64 sizes), prompt 512 and 64 new\n"
    "tokens (1..1048576 each). --prompt plus --new plus 2 (the untimed first steps) must fit in\n"
    "the model's max_position_embeddings. Under --tp the collectives run eagerly where the\n"
    "backend cannot capture them.\n"
    "Exit status: 0; 1 when the run failed; 2 for a wrong command line.\n";

typedef struct bench_args {
    const char *config, *dtype_name, *batch_text, *backend, *peer;
    int prompt, new_tokens, block_size, json, pieces, quiet, loop, tp;
    int64_t batch[64];
    int nbatch;
} bench_args;

#define MAX_PIECE_NAMES 8

/* One piece name's device time per decode step, over its layers. */
typedef struct piece_sum {
    const char *name;
    int count;
    double ms;
} piece_sum;

typedef struct bench_row {
    int64_t batch;
    double eager_ms, graph_ms, capture_ms, comm_ms; /* comm_ms: --tp's collectives alone */
    uint64_t graph_bytes;
    double peer_eager_ms, peer_compiled_ms; /* 0: the peer has no such number */
    piece_sum pieces[MAX_PIECE_NAMES];
    int npieces;
    double pieces_ms;
} bench_row;

/* "1.23" or "-" when absent. */
static const char *ms_text(double ms, char *buf, size_t cap)
{
    if (ms > 0) snprintf(buf, cap, "%.3f", ms);
    else snprintf(buf, cap, "-");
    return buf;
}

static const char *ratio_text(double peer, double vg, char *buf, size_t cap)
{
    if (peer > 0 && vg > 0) snprintf(buf, cap, "%.2fx", peer / vg);
    else snprintf(buf, cap, "-");
    return buf;
}

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
        {"--peer", VG_OPT_STRING, &a->peer, 0, 0, "the peer's JSON lines file"},
        {"--pieces", VG_OPT_FLAG, &a->pieces, 0, 0, NULL},
        {"--loop", VG_OPT_FLAG, &a->loop, 0, 0, NULL},
        {"--json", VG_OPT_FLAG, &a->json, 0, 0, NULL},
        {"--quiet", VG_OPT_FLAG, &a->quiet, 0, 0, NULL},
        {"--tp", VG_OPT_INT, &a->tp, 1, 4096, NULL},
    };
    int rc = vg_opt_parse(CMD, k_help, opts, (int)(sizeof opts / sizeof opts[0]), argc, argv, 2);
    if (rc) return rc;
    if (!a->config) return vg_cli_usage(CMD, "--config is required (see vg lm bench --help)");
    const vg_int_list rule = {1, 4096, 0, 64, 0};
    char why[96];
    if ((a->nbatch = vg_int_list_parse(a->batch_text, &rule, a->batch, NULL, why, sizeof why)) < 0)
        return vg_cli_usage(CMD, "--batch wants up to 64 sizes in 1..4096 separated by commas, "
                                 "got '%s': %s", a->batch_text, why);
    return 0;
}

/* Prefill b sequences, then time `steps` decode steps; *ms per step. With piece timing on,
 * warm_pieces (max entries) receives the runner's per-piece totals before the timed steps. */
static vg_status run_batch(vg_lm *lm, int64_t b, int prompt, int steps, int vocab, int32_t *ids,
                           int32_t *toks, double *warm_pieces, int max, double *ms, vg_progress *progress,
                           const char *what)
{
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
        vg_progress_show(progress, what, j + 2, steps + 2);
        for (int64_t i = 0; i < b; i++) s[i] = (vg_lm_seq_tokens){ids[i], &toks[i], 1};
        vg_lm_step_info info;
        st = vg_lm_step(lm, s, (int)b, NULL, toks, &info);
        if (st == VG_OK && j >= 0) *ms += info.total_ms;
        if (j == -1 && warm_pieces) vg_runner_piece_times(vg_lm_runner(lm), warm_pieces, max);
    }
    *ms /= steps;
    for (int64_t i = 0; i < added; i++) vg_lm_seq_free(lm, ids[i]);
    free(prompt_ids);
    free(s);
    return st;
}

/* Each piece name's device time per step over the timed steps (the totals before them in warm). */
static void sum_pieces(vg_lm *lm, const double *warm, int n, int steps, bench_row *r)
{
    vg_runner *run = vg_lm_runner(lm);
    double *ms = calloc((size_t)n + 1, sizeof *ms);
    if (!ms) return;
    vg_runner_piece_times(run, ms, n);
    for (int i = 0; i < n; i++) {
        int64_t arg;
        const char *name = vg_runner_piece_name(run, i, &arg);
        int g = 0;
        while (g < r->npieces && strcmp(r->pieces[g].name, name)) g++;
        if (g == MAX_PIECE_NAMES) continue;
        if (g == r->npieces) r->pieces[r->npieces++] = (piece_sum){name, 0, 0};
        double per_step = (ms[i] - warm[i]) / steps;
        r->pieces[g].count++, r->pieces[g].ms += per_step, r->pieces_ms += per_step;
    }
    free(ms);
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
    vg_tp_rank tr;
    int is_rank = vg_tp_rank_from_env(CMD, a.tp, &tr);
    if (is_rank == 2) return 2;
    int quiet_rank = is_rank && tr.rank != 0; /* ranks other than 0 report nothing */
    if (quiet_rank) a.quiet = 1;
    const int launcher = a.tp > 1 && !is_rank; /* starts the ranks, which measure */
    /* The peer's lines, read once and only where they are reported (not by --tp's launcher nor its
     * quiet ranks): a FIFO or a pipe cannot be read twice. Before anything is measured. */
    lm_peer peer = {0};
    if (a.peer && !quiet_rank && !launcher && lm_peer_read(CMD, a.peer, &peer)) return 1;
    if (a.peer && launcher) { /* a bad file fails here at once, not after the ranks' join times out */
        struct stat pst;
        if (stat(a.peer, &pst) != 0)
            return vg_cli_fail(CMD, "cannot read the peer file %s: %s", a.peer, strerror(errno));
        if (S_ISREG(pst.st_mode) && lm_peer_read(CMD, a.peer, &peer)) return 1; /* a regular file reads twice */
    }
    for (int p = 0; !launcher && p < peer.n; p++)
        for (int k = 0; k < 2; k++) {
            const int64_t pr = k ? peer.fast_prompt[p] : peer.hf_prompt[p];
            if (pr && pr != a.prompt)
                fprintf(stderr, "vg " CMD ": note: the %speer measured batch %lld with a prompt of %lld tokens, "
                                "this run %d\n", k ? "fast " : "", (long long)peer.batch[p], (long long)pr, a.prompt);
        }
    int64_t maxb = 0;
    for (int i = 0; i < a.nbatch; i++) maxb = a.batch[i] > maxb ? a.batch[i] : maxb;
    int bs = a.block_size ? a.block_size : 16;
    int64_t len = (int64_t)a.prompt + a.new_tokens + 2; /* + the two untimed decode steps */
    vg_lm_info model;
    if (vg_lm_inspect_synthetic(a.config, &model) != VG_OK) return vg_cli_fail(CMD, "%s", vg_last_error());
    if (len > model.max_position)
        return vg_cli_usage(CMD, "--prompt %d and --new %d (plus 2 warm-up steps) make %lld positions, more "
                                 "than max_position_embeddings %lld of %s", a.prompt, a.new_tokens,
                            (long long)len, (long long)model.max_position, a.config);
    if (launcher) return vg_tp_launch(CMD, a.tp, a.backend, &model, argc, argv);
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
    vg_comm *comm = NULL;
    vg_lm *lm = NULL;
    if (is_rank && vg_tp_open(CMD, &tr, a.backend, &rt, &comm)) return 1;
    o.comm = comm;
    if ((!rt && vg_runtime_open(&ro, &rt) != VG_OK) || vg_lm_create_synthetic(rt, a.config, 1, dt, &o, &lm) != VG_OK) {
        rc = vg_cli_fail(CMD, "%s", vg_last_error());
        vg_comm_destroy(comm);
        vg_runtime_close(rt);
        return rc;
    }
    vg_lm_info info;
    vg_lm_get_info(lm, &info);
    int32_t *ids = malloc((size_t)maxb * sizeof(int32_t)), *toks = malloc((size_t)maxb * sizeof(int32_t));
    bench_row *rows = calloc((size_t)a.nbatch, sizeof *rows);
    if (!ids || !toks || !rows) rc = vg_cli_fail(CMD, "out of memory");
    double *warm = NULL;
    int npieces = 0;
    vg_progress progress;
    vg_progress_start(&progress, a.quiet);
    for (int i = 0; !rc && i < a.nbatch; i++) {
        bench_row *r = &rows[i];
        r->batch = a.batch[i];
        const int at = lm_peer_find(&peer, r->batch);
        if (at >= 0) r->peer_eager_ms = peer.eager_ms[at], r->peer_compiled_ms = peer.compiled_ms[at];
        for (int g = 0; !rc && g < (a.pieces ? 3 : 2); g++) {
            /* 0: eager, 1: graphs, 2: eager with piece timing */
            o.mode = g == 1 ? VG_MODE_FULL_AND_PIECEWISE : VG_MODE_NONE;
            o.profile_pieces = g == 2;
            double ms = 0;
            vg_status st = vg_lm_reconfigure(lm, &o);
            if (st == VG_OK && g == 2) {
                npieces = vg_runner_piece_times(vg_lm_runner(lm), NULL, 0);
                free(warm);
                warm = calloc((size_t)npieces + 1, sizeof *warm);
                if (!warm) st = vg_error_set(VG_ERR_OUT_OF_MEMORY, "out of memory");
            }
            char what[96];
            snprintf(what, sizeof what, "lm bench: batch %lld (%d/%d), %s, decode step", (long long)r->batch,
                     i + 1, a.nbatch, g == 1 ? "graphs" : g == 2 ? "pieces" : "eager");
            if (st == VG_OK)
                st = run_batch(lm, r->batch, a.prompt, a.new_tokens, info.vocab, ids, toks, g == 2 ? warm : NULL,
                               npieces, &ms, &progress, what);
            if (st != VG_OK) {
                rc = vg_cli_fail(CMD, "batch %lld: %s", (long long)r->batch, vg_last_error());
                break;
            }
            if (g == 2) {
                sum_pieces(lm, warm, npieces, a.new_tokens, r);
            } else if (g) {
                r->graph_ms = ms;
                vg_bucket_stats total;
                vg_runner_stats(vg_lm_runner(lm), NULL, 0, &total);
                r->capture_ms = total.capture_ms;
                r->graph_bytes = total.graph_bytes;
                vg_runner *run = vg_lm_runner(lm);
                int bk = vg_runner_bucket_for(run, r->batch);
                int64_t T = bk >= 0 ? vg_runner_bucket_size(run, bk) : r->batch;
                if (comm) /* the step's collectives at its bucket's padded size */
                    rc = vg_cli_lm_tp_comm_ms(CMD, rt, comm, &info, dt, T, T < maxb ? T : maxb,
                                              a.new_tokens, &r->comm_ms);
            } else {
                r->eager_ms = ms;
            }
        }
    }
    vg_progress_end(&progress);
    lm_loop_row *loop_rows = a.loop ? calloc((size_t)a.nbatch, sizeof *loop_rows) : NULL; /* --loop */
    if (!rc && a.loop)
        rc = loop_rows ? vg_cli_lm_bench_loop(CMD, lm, &o, a.batch, a.nbatch, a.prompt, a.new_tokens, loop_rows)
                       : vg_cli_fail(CMD, "out of memory");
    if (!rc && a.json && !quiet_rank) {
        cJSON *j = cJSON_CreateObject(), *arr;
        cJSON_AddStringToObject(j, "backend", vg_runtime_backend_name(rt));
        cJSON_AddStringToObject(j, "config", a.config);
        cJSON_AddStringToObject(j, "dtype", vg_dtype_name(dt));
        cJSON_AddNumberToObject(j, "prompt", a.prompt);
        cJSON_AddNumberToObject(j, "new", a.new_tokens);
        cJSON_AddNumberToObject(j, "tp", comm ? vg_comm_size(comm) : 1);
        if (a.peer) cJSON_AddStringToObject(j, "peer", a.peer);
        arr = cJSON_AddArrayToObject(j, "batches");
        for (int i = 0; i < a.nbatch; i++) {
            cJSON *e = cJSON_CreateObject();
            cJSON_AddNumberToObject(e, "batch", (double)rows[i].batch);
            cJSON_AddNumberToObject(e, "eager_ms_per_step", rows[i].eager_ms);
            cJSON_AddNumberToObject(e, "graph_ms_per_step", rows[i].graph_ms);
            cJSON_AddNumberToObject(e, "graph_tokens_per_s", rows[i].batch * 1e3 / rows[i].graph_ms);
            cJSON_AddNumberToObject(e, "capture_ms", rows[i].capture_ms);
            cJSON_AddNumberToObject(e, "graph_bytes", (double)rows[i].graph_bytes);
            if (comm) {
                cJSON_AddNumberToObject(e, "comm_ms_per_step", rows[i].comm_ms);
                cJSON_AddNumberToObject(e, "comm_share", rows[i].comm_ms / rows[i].graph_ms);
            }
            if (rows[i].peer_eager_ms > 0) {
                cJSON_AddNumberToObject(e, "peer_eager_ms_per_step", rows[i].peer_eager_ms);
                cJSON_AddNumberToObject(e, "speedup_vs_peer_eager", rows[i].peer_eager_ms / rows[i].graph_ms);
            }
            if (rows[i].peer_compiled_ms > 0) {
                cJSON_AddNumberToObject(e, "peer_static_compiled_ms_per_step", rows[i].peer_compiled_ms);
                cJSON_AddNumberToObject(e, "speedup_vs_peer_compiled", rows[i].peer_compiled_ms / rows[i].graph_ms);
            }
            lm_fast_peer_json(&peer, rows[i].batch, rows[i].graph_ms, e);
            if (a.pieces) {
                cJSON *pa = cJSON_AddArrayToObject(e, "pieces");
                cJSON_AddNumberToObject(e, "pieces_ms_per_step", rows[i].pieces_ms);
                for (int g = 0; g < rows[i].npieces; g++) {
                    cJSON *pj = cJSON_CreateObject();
                    cJSON_AddStringToObject(pj, "piece", rows[i].pieces[g].name);
                    cJSON_AddNumberToObject(pj, "count", rows[i].pieces[g].count);
                    cJSON_AddNumberToObject(pj, "ms_per_step", rows[i].pieces[g].ms);
                    cJSON_AddItemToArray(pa, pj);
                }
            }
            cJSON_AddItemToArray(arr, e);
        }
        if (a.loop) vg_cli_lm_bench_loop_report(loop_rows, a.nbatch, a.new_tokens, j);
        rc = vg_cli_print_json(j, 0);
    } else if (!rc && !quiet_rank) {
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
        if (comm) {
            printf("\ntensor parallel over %d ranks: the collectives of a decode step alone (%d all-reduces of\n"
                   "tokens x hidden, one all-gather of the head's logits; one graph, replayed), rank 0:\n",
                   vg_comm_size(comm), 2 * info.layers);
            printf("  batch   graph ms/step   comm ms/step   comm share\n");
            for (int i = 0; i < a.nbatch; i++)
                printf("  %5lld   %13.3f   %12.3f   %9.1f%%\n", (long long)rows[i].batch, rows[i].graph_ms,
                       rows[i].comm_ms, 100 * rows[i].comm_ms / rows[i].graph_ms);
        }
        for (int i = 0; a.pieces && i < a.nbatch; i++) {
            const bench_row *r = &rows[i];
            printf("\npieces of an eager decode step at batch %lld (device events around each): %.3f ms\n",
                   (long long)r->batch, r->pieces_ms);
            for (int g = 0; g < r->npieces; g++)
                printf("  %-14s %4dx  %8.3f ms  %5.1f%%\n", r->pieces[g].name, r->pieces[g].count,
                       r->pieces[g].ms, r->pieces_ms > 0 ? 100 * r->pieces[g].ms / r->pieces_ms : 0.0);
        }
        if (a.peer && (peer.hf || !peer.fast)) {
            char pe[24], pc[24], re[24], rcmp[24];
            printf("\nbeside the peer (%s; ms per decode step; speed-up = peer / vg graph):\n", a.peer);
            printf("  batch   vg graph   peer compiled   speed-up   peer eager   speed-up\n");
            for (int i = 0; i < a.nbatch; i++) {
                const bench_row *r = &rows[i];
                printf("  %5lld   %8.3f   %13s   %8s   %10s   %8s\n", (long long)r->batch, r->graph_ms,
                       ms_text(r->peer_compiled_ms, pc, sizeof pc),
                       ratio_text(r->peer_compiled_ms, r->graph_ms, rcmp, sizeof rcmp),
                       ms_text(r->peer_eager_ms, pe, sizeof pe), ratio_text(r->peer_eager_ms, r->graph_ms, re, sizeof re));
            }
        }
    }
    if (!rc && !a.json && !quiet_rank && peer.fast) {
        lm_fast_peer_print_head(a.peer);
        for (int i = 0; i < a.nbatch; i++) lm_fast_peer_print_row(&peer, rows[i].batch, rows[i].graph_ms);
    }
    if (!rc && !a.json && !quiet_rank && a.loop) vg_cli_lm_bench_loop_report(loop_rows, a.nbatch, a.new_tokens, NULL);
    free(loop_rows);
    free(ids), free(toks), free(rows), free(warm);
    vg_lm_free(lm);
    vg_comm_destroy(comm);
    vg_runtime_close(rt);
    return rc;
}
