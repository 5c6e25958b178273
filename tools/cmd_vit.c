/* vg vit encode: run the vision encoder on a safetensors input, write the embeddings. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vg/vg_safetensors.h"
#include "vg/vg_vit.h"
#include "vg_cli.h"

static const char k_help[] =
    "usage: vg vit bench ... (see vg vit bench --help)\n"
    "       vg vit encode --model DIR --input IN.safetensors --output OUT.safetensors\n"
    "           [--backend B] [--mode none|piecewise|full|full_and_piecewise]\n"
    "           [--capture-sizes a,b,c] [--max-capture-size N] [--warmup] [--repeat N]\n"
    "           [--stats] [--json]\n"
    "\n"
    "DIR is a Hugging Face model directory (config.json with vision_config, model.safetensors\n"
    "or shards with model.safetensors.index.json). IN holds pixel_values [S, C*T*P*P] (F32,\n"
    "BF16 or F16) and grid_thw [n, 3] (I64 or I32), as the HF image processor makes them.\n"
    "OUT gets embeddings, F32 [S/merge^2, out_hidden_size], images in input order.\n"
    "  --repeat N   encode N times (the first call captures, later ones replay)\n"
    "  --stats      print the graph runner's statistics\n"
    "  --json       print the summary as JSON\n";

typedef struct vit_args {
    const char *model, *input, *output, *backend;
    vg_vit_options opts;
    int64_t sizes[256];
    int repeat, stats, json;
} vit_args;

static int parse_sizes(const char *text, vit_args *a)
{
    int n = 0;
    const char *p = text;
    while (*p) {
        char *end = NULL;
        errno = 0;
        long long v = strtoll(p, &end, 10);
        if (errno || end == p || v <= 0 || n == 256 || (*end && *end != ',')) return -1;
        a->sizes[n++] = v;
        p = *end ? end + 1 : end;
    }
    a->opts.capture_sizes = a->sizes;
    a->opts.num_capture_sizes = n;
    return n ? 0 : -1;
}

static int parse_args(int argc, char **argv, vit_args *a)
{
    vg_vit_options_init(&a->opts);
    a->repeat = 1;
    for (int i = 2; i < argc; i++) {
        const char *k = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        char *end = NULL;
        if (!strcmp(k, "--stats")) a->stats = 1;
        else if (!strcmp(k, "--json")) a->json = 1;
        else if (!strcmp(k, "--warmup")) a->opts.warmup = 1;
        else if (!v) return vg_cli_fail("vit", "option '%s' needs a value or is unknown (see --help)", k);
        else if (!strcmp(k, "--model")) a->model = v, i++;
        else if (!strcmp(k, "--input")) a->input = v, i++;
        else if (!strcmp(k, "--output")) a->output = v, i++;
        else if (!strcmp(k, "--backend")) a->backend = v, i++;
        else if (!strcmp(k, "--mode")) {
            if (vg_graph_mode_parse(v, &a->opts.mode) != VG_OK)
                return vg_cli_fail("vit", "%s", vg_last_error());
            i++;
        } else if (!strcmp(k, "--capture-sizes")) {
            if (parse_sizes(v, a)) return vg_cli_fail("vit", "--capture-sizes wants positive integers "
                                                             "separated by commas, got '%s'", v);
            i++;
        } else if (!strcmp(k, "--max-capture-size")) {
            a->opts.max_capture_size = strtoll(v, &end, 10);
            if (*end || a->opts.max_capture_size <= 0)
                return vg_cli_fail("vit", "--max-capture-size wants a positive integer, got '%s'", v);
            i++;
        } else if (!strcmp(k, "--repeat")) {
            a->repeat = (int)strtol(v, &end, 10);
            if (*end || a->repeat < 1 || a->repeat > 1000000)
                return vg_cli_fail("vit", "--repeat wants an integer in [1, 1000000], got '%s'", v);
            i++;
        } else return vg_cli_fail("vit", "unknown option '%s' (see vg vit --help)", k);
    }
    if (!a->model || !a->input || !a->output)
        return vg_cli_fail("vit", "--model, --input and --output are required (see vg vit --help)");
    return 0;
}

/* pixel_values and grid_thw out of the input file, checked and converted. */
static int read_input(const char *path, vg_st_file **file, const vg_st_tensor **pv, int64_t **grid,
                      int64_t *n)
{
    if (vg_st_open(path, file) != VG_OK) return vg_cli_fail("vit", "%s", vg_last_error());
    *pv = vg_st_find(*file, "pixel_values");
    const vg_st_tensor *g = vg_st_find(*file, "grid_thw");
    if (!*pv) return vg_cli_fail("vit", "%s: tensor 'pixel_values' is missing", path);
    if (!g) return vg_cli_fail("vit", "%s: tensor 'grid_thw' is missing", path);
    if ((*pv)->ndim != 2 || ((*pv)->dtype != VG_DTYPE_F32 && (*pv)->dtype != VG_DTYPE_BF16 &&
                             (*pv)->dtype != VG_DTYPE_F16))
        return vg_cli_fail("vit", "%s: 'pixel_values' must be a 2-D F32, BF16 or F16 tensor (is %d-D %s)",
                           path, (*pv)->ndim, (*pv)->dtype_name);
    if (g->ndim != 2 || g->shape[1] != 3 || (g->dtype != VG_DTYPE_I64 && g->dtype != VG_DTYPE_I32))
        return vg_cli_fail("vit", "%s: 'grid_thw' must be an I64 or I32 tensor of shape [n, 3]", path);
    *n = g->shape[0];
    *grid = malloc((size_t)(*n ? *n : 1) * 3 * sizeof(int64_t));
    if (!*grid) return vg_cli_fail("vit", "out of memory");
    for (int64_t i = 0; i < *n * 3; i++) {
        if (g->dtype == VG_DTYPE_I64) {
            memcpy(&(*grid)[i], (const char *)g->data + 8 * i, 8);
        } else {
            int32_t v;
            memcpy(&v, (const char *)g->data + 4 * i, 4);
            (*grid)[i] = v;
        }
    }
    return 0;
}

static void summary(const vit_args *a, vg_runtime *rt, const vg_vit_output *o, int64_t tokens)
{
    double sum = 0, sq = 0, mn = INFINITY, mx = -INFINITY;
    size_t n = (size_t)(o->rows * o->cols);
    for (size_t i = 0; i < n; i++) {
        double v = o->embeddings[i];
        sum += v, sq += v * v, mn = fmin(mn, v), mx = fmax(mx, v);
    }
    double mean = sum / (double)n, sd = sqrt(fmax(sq / (double)n - mean * mean, 0.0));
    static const char *const paths[] = {"eager", "full graph", "piecewise graphs"};
    if (a->json) {
        cJSON *j = cJSON_CreateObject();
        cJSON_AddStringToObject(j, "backend", vg_runtime_backend_name(rt));
        cJSON_AddNumberToObject(j, "patches", (double)tokens);
        cJSON_AddNumberToObject(j, "rows", (double)o->rows);
        cJSON_AddNumberToObject(j, "cols", (double)o->cols);
        cJSON_AddNumberToObject(j, "mean", mean);
        cJSON_AddNumberToObject(j, "std", sd);
        cJSON_AddNumberToObject(j, "min", mn);
        cJSON_AddNumberToObject(j, "max", mx);
        cJSON_AddNumberToObject(j, "bucket_tokens", (double)o->run.padded_tokens);
        cJSON_AddStringToObject(j, "path", paths[o->run.path]);
        cJSON_AddNumberToObject(j, "device_ms", o->device_ms);
        cJSON_AddStringToObject(j, "output", a->output);
        char *t = cJSON_PrintUnformatted(j);
        if (t) puts(t);
        free(t);
        cJSON_Delete(j);
        return;
    }
    printf("backend %s: %lld patches -> embeddings [%lld, %lld] F32, written to %s\n",
           vg_runtime_backend_name(rt), (long long)tokens, (long long)o->rows, (long long)o->cols,
           a->output);
    printf("  values: mean %.6g, std %.6g, min %.6g, max %.6g\n", mean, sd, mn, mx);
    printf("  last call: %s, bucket %lld tokens (%lld padding), %d graph launch(es), %d eager "
           "piece(s), device %.3f ms\n", paths[o->run.path], (long long)o->run.padded_tokens,
           (long long)(o->run.padded_tokens - tokens), o->run.graph_launches, o->run.eager_pieces,
           o->device_ms);
}

static int encode(const vit_args *a)
{
    vg_runtime_options ro;
    vg_runtime_options_init(&ro);
    ro.backend = a->backend;
    vg_runtime *rt = NULL;
    vg_vit *vit = NULL;
    vg_st_file *in = NULL;
    const vg_st_tensor *pv = NULL;
    int64_t *grid = NULL, n = 0;
    vg_vit_output o = {0};
    int rc = read_input(a->input, &in, &pv, &grid, &n);
    if (!rc && vg_runtime_open(&ro, &rt) != VG_OK) rc = vg_cli_fail("vit", "%s", vg_last_error());
    if (!rc && vg_vit_load(rt, a->model, &a->opts, &vit) != VG_OK) rc = vg_cli_fail("vit", "%s", vg_last_error());
    /* pixel data may sit unaligned in the mapping: encode copies it, element by element */
    void *pixels = NULL;
    if (!rc) {
        pixels = malloc(pv->nbytes ? pv->nbytes : 1);
        if (!pixels) rc = vg_cli_fail("vit", "out of memory");
        else memcpy(pixels, pv->data, pv->nbytes);
    }
    for (int i = 0; !rc && i < a->repeat; i++) {
        vg_free(o.embeddings);
        o.embeddings = NULL;
        if (vg_vit_encode(vit, pixels, pv->dtype, pv->shape[0], pv->shape[1], grid, n, &o) != VG_OK)
            rc = vg_cli_fail("vit", "%s: %s", a->input, vg_last_error());
    }
    if (!rc) {
        int64_t shape[2] = {o.rows, o.cols};
        vg_st_write_tensor t = {"embeddings", VG_DTYPE_F32, 2, shape, o.embeddings};
        if (vg_st_write(a->output, &t, 1) != VG_OK) rc = vg_cli_fail("vit", "%s", vg_last_error());
    }
    if (!rc) summary(a, rt, &o, pv->shape[0]);
    if (!rc && a->stats) {
        char *text = NULL;
        if (vg_runner_stats_text(vg_vit_runner(vit), &text) == VG_OK) fputs(text, stdout);
        vg_free(text);
    }
    vg_free(o.embeddings);
    free(pixels);
    free(grid);
    vg_vit_free(vit);
    vg_runtime_close(rt);
    vg_st_close(in);
    return rc;
}

int vg_cmd_vit(int argc, char **argv)
{
    if (argc < 2 || vg_cli_is_help(argv[1])) {
        fputs(k_help, argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    if (strcmp(argv[1], "bench") == 0) return vg_vit_bench(argc, argv);
    if (strcmp(argv[1], "encode") != 0)
        return vg_cli_fail("vit", "unknown subcommand '%s' (see vg vit --help)", argv[1]);
    vit_args a;
    memset(&a, 0, sizeof a);
    if (parse_args(argc, argv, &a)) return 1;
    return encode(&a);
}
