/* SPDX-License-Identifier: Apache-2.0 */
/* vg vit encode: run the vision encoder on a safetensors input, write the embeddings (and the
 * deepstack features of a Qwen3-VL tower), and say whether they match a reference. Every input and the output's directory are checked before
 * the model is loaded. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_args.h"
#include "cli_output.h"
#include "cli_progress.h"
#include "cli_safetensors.h"
#include "runner_stats_format.h"
#include "vg/vg_half.h"
#include "vg/vg_vit.h"
#include "vg_cli.h"
#include "vit_expected.h"

static const char k_help[] =
    "usage: vg vit encode --model DIR --input IN.safetensors --output OUT.safetensors\n"
    "           [--backend B] [--mode none|piecewise|full|full_and_piecewise]\n"
    "           [--capture-sizes a,b,c] [--max-capture-size N] [--warmup] [--repeat N]\n"
    "           [--expected REF.safetensors [--tolerance REL]] [--stats] [--json] [--quiet]\n"
    "\n"
    "DIR is a Hugging Face model directory (config.json with vision_config, model.safetensors\n"
    "or shards with model.safetensors.index.json). IN holds pixel_values [S, C*T*P*P] (F32,\n"
    "BF16 or F16) and grid_thw [n, 3] (I64 or I32), as the HF image processor makes them.\n"
    "OUT gets embeddings, F32 [S/merge^2, out_hidden_size], images in input order, and for a\n"
    "model with deepstack mergers (Qwen3-VL) deepstack.0, deepstack.1, ... of the same shape;\n"
    "OUT may be a file (replaced atomically), a symbolic link (its target is written) or a device\n"
    "or FIFO (written through), not the --input or --expected file nor a file of the model\n"
    "directory; when OUT is standard output (/dev/stdout), the summary goes to stderr.\n"
    "  --mode M            graph mode (default full_and_piecewise)\n"
    "  --capture-sizes L   token counts to capture, multiples of the model's merge unit\n"
    "                      (spatial_merge_size^2: 4 for Qwen2.5-VL and Qwen3-VL; default the\n"
    "                      runner's ladder, 64 to 4096)\n"
    "  --max-capture-size N  calls above N tokens run eagerly\n"
    "  --warmup            capture the input's bucket before the first call\n"
    "  --repeat N          encode N times, 1..1000000, default 1 (the first call captures, later\n"
    "                      ones replay)\n"
    "  --expected REF      compare the outputs with REF's tensors of the same names (same shapes;\n"
    "                      every deepstack.K the model makes): max relative error =\n"
    "                      max|out - ref| / max|ref|, per tensor, the largest deciding\n"
    "  --tolerance REL     the largest relative error accepted, 0..1 (default from the compute\n"
    "                      dtype: 1e-4 for F32, 3e-2 for BF16 and F16)\n"
    "  --stats             print the graph runner's statistics\n"
    "  --json              print the summary (statistics, comparison) as one JSON document\n"
    "  --quiet             no progress on stderr (shown only when stderr is a terminal)\n"
    "Exit status: 0; 1 when an input, the run or the output failed (a NaN or infinity in an\n"
    "output included), or an output is not within tolerance; 2 for a wrong command line.\n";

typedef struct encode_args {
    const char *model, *input, *output, *backend, *mode_name, *sizes_text, *expected;
    double tolerance; /* < 0: from the compute dtype */
    int repeat, stats, json, quiet, warmup;
    vg_vit_options opts;
    int64_t sizes[VG_CLI_MAX_CAPTURE_SIZES];
} encode_args;

static int parse_args(int argc, char **argv, encode_args *a)
{
    vg_vit_options_init(&a->opts);
    a->repeat = 1;
    a->tolerance = -1;
    const vg_opt opts[] = {
        {"--model", VG_OPT_STRING, &a->model, 0, 0, "a model directory"},
        {"--input", VG_OPT_STRING, &a->input, 0, 0, "a safetensors file"},
        {"--output", VG_OPT_STRING, &a->output, 0, 0, "a file to write"},
        {"--backend", VG_OPT_STRING, &a->backend, 0, 0, "a backend name or the path of a plugin .so"},
        {"--mode", VG_OPT_STRING, &a->mode_name, 0, 0, "none, piecewise, full or full_and_piecewise"},
        {"--capture-sizes", VG_OPT_STRING, &a->sizes_text, 0, 0, "positive integers separated by commas"},
        {"--max-capture-size", VG_OPT_I64, &a->opts.max_capture_size, 1, 1e15, NULL},
        {"--repeat", VG_OPT_INT, &a->repeat, 1, 1000000, NULL},
        {"--expected", VG_OPT_STRING, &a->expected, 0, 0, "a safetensors file with 'embeddings'"},
        {"--tolerance", VG_OPT_DOUBLE, &a->tolerance, 0, 1, NULL},
        {"--warmup", VG_OPT_FLAG, &a->warmup, 0, 0, NULL},
        {"--stats", VG_OPT_FLAG, &a->stats, 0, 0, NULL},
        {"--json", VG_OPT_FLAG, &a->json, 0, 0, NULL},
        {"--quiet", VG_OPT_FLAG, &a->quiet, 0, 0, NULL},
    };
    int rc = vg_opt_parse("vit encode", k_help, opts, (int)(sizeof opts / sizeof opts[0]), argc, argv, 2);
    if (rc) return rc;
    if (a->mode_name && vg_graph_mode_parse(a->mode_name, &a->opts.mode) != VG_OK)
        return vg_cli_usage("vit encode", "--mode: %s", vg_last_error());
    if (a->sizes_text) {
        rc = vg_capture_sizes_parse("vit encode", a->sizes_text, a->sizes, &a->opts.num_capture_sizes);
        if (rc) return rc;
        a->opts.capture_sizes = a->sizes;
    }
    if (a->tolerance >= 0 && !a->expected)
        return vg_cli_usage("vit encode", "--tolerance needs --expected");
    if (!a->model || !a->input || !a->output)
        return vg_cli_usage("vit encode", "--model, --input and --output are required (see vg vit encode --help)");
    return 0;
}

typedef struct input {
    vg_st_file *file;
    const vg_st_tensor *pv;
    int64_t *grid, n;
} input;

static double pixel(const vg_st_tensor *pv, int64_t i)
{
    if (pv->dtype == VG_DTYPE_F32) {
        float v;
        memcpy(&v, (const char *)pv->data + 4 * i, 4);
        return v;
    }
    uint16_t h;
    memcpy(&h, (const char *)pv->data + 2 * i, 2);
    return pv->dtype == VG_DTYPE_BF16 ? vg_bf16_to_f32(h) : vg_f16_to_f32(h);
}

/* A NaN or infinity among the pixels would make the outputs so; refused, so that a non-finite
 * output always means the model overflowed. */
static int check_finite_pixels(const char *path, const vg_st_tensor *pv)
{
    for (int64_t i = 0; i < (int64_t)pv->numel; i++)
        if (!isfinite(pixel(pv, i)))
            return vg_cli_fail("vit encode", "%s: pixel_values[%lld, %lld] is %g: the input must be finite",
                               path, (long long)(i / pv->shape[1]), (long long)(i % pv->shape[1]), pixel(pv, i));
    return 0;
}

/* pixel_values and grid_thw out of the input file, checked and converted. */
static int read_input(const char *path, input *in)
{
    if (vg_st_open(path, &in->file) != VG_OK) return vg_cli_fail("vit encode", "%s", vg_last_error());
    in->pv = vg_st_find(in->file, "pixel_values");
    const vg_st_tensor *g = vg_st_find(in->file, "grid_thw"), *pv = in->pv;
    if (!pv) return vg_cli_fail("vit encode", "%s: tensor 'pixel_values' is missing", path);
    if (!g) return vg_cli_fail("vit encode", "%s: tensor 'grid_thw' is missing", path);
    if (pv->ndim != 2 || (pv->dtype != VG_DTYPE_F32 && pv->dtype != VG_DTYPE_BF16 && pv->dtype != VG_DTYPE_F16))
        return vg_cli_fail("vit encode", "%s: 'pixel_values' must be a 2-D F32, BF16 or F16 tensor (is %d-D %s)",
                           path, pv->ndim, pv->dtype_name);
    if (g->ndim != 2 || g->shape[1] != 3 || (g->dtype != VG_DTYPE_I64 && g->dtype != VG_DTYPE_I32))
        return vg_cli_fail("vit encode", "%s: 'grid_thw' must be an I64 or I32 tensor of shape [n, 3]", path);
    in->n = g->shape[0];
    in->grid = malloc((size_t)(in->n ? in->n : 1) * 3 * sizeof(int64_t));
    if (!in->grid) return vg_cli_fail("vit encode", "out of memory");
    for (int64_t i = 0; i < in->n * 3; i++) {
        if (g->dtype == VG_DTYPE_I64) {
            memcpy(&in->grid[i], (const char *)g->data + 8 * i, 8);
        } else {
            int32_t v;
            memcpy(&v, (const char *)g->data + 4 * i, 4);
            in->grid[i] = v;
        }
    }
    return check_finite_pixels(path, pv);
}

/* The patches grid_thw describes (sum of t x h x w), computed without overflow: -1 when a value
 * is below 1 or the sum passes pixel_values' rows (the encoder then says what is wrong). */
static int64_t grid_patches(const input *in)
{
    int64_t rows = in->pv->shape[0], total = 0;
    for (int64_t i = 0; i < in->n; i++) {
        int64_t t = in->grid[3 * i], h = in->grid[3 * i + 1], w = in->grid[3 * i + 2], left = rows - total;
        if (t < 1 || h < 1 || w < 1 || t > left || h > left / t || w > left / (t * h)) return -1;
        total += t * h * w;
    }
    return total;
}

/* The reference's tensors against the outputs', when the input is consistent (otherwise the
 * encoder names what is wrong with it). */
static int check_expected_shape(const vg_expected *e, const input *in, const vg_vit_info *info)
{
    int64_t patches = grid_patches(in), unit = (int64_t)info->spatial_merge * info->spatial_merge;
    if (patches != in->pv->shape[0] || patches % unit) return 0;
    if (vg_expected_check_shape(e, patches / unit, info->out_hidden)) return 1;
    return vg_expected_check_deepstack(e, info->num_deepstack, patches / unit, info->out_hidden);
}

/* Every output value is finite (the inputs were): 0, or 1 after naming the first that is not. */
static int check_finite_outputs(const vg_vit_output *o)
{
    size_t n = (size_t)(o->rows * o->cols);
    for (int k = 0; k <= o->num_deepstack; k++) {
        const float *v = k ? o->deepstack[k - 1] : o->embeddings;
        for (size_t i = 0; i < n; i++) {
            if (isfinite(v[i])) continue;
            char name[32];
            if (k) snprintf(name, sizeof name, "deepstack.%d", k - 1);
            else snprintf(name, sizeof name, "embeddings");
            return vg_cli_fail("vit encode", "%s[%lld, %lld] is %g from finite pixel values: the model's "
                                             "weights overflow in this computation; nothing was written",
                               name, (long long)(i / (size_t)o->cols), (long long)(i % (size_t)o->cols), v[i]);
        }
    }
    return 0;
}

/* embeddings, then deepstack.0, deepstack.1, ... */
static int write_outputs(const char *path, const vg_vit_output *o)
{
    int n = 1 + o->num_deepstack;
    vg_st_write_tensor *t = calloc((size_t)n, sizeof *t);
    char (*names)[32] = calloc((size_t)n, sizeof *names);
    int rc = !t || !names ? vg_cli_fail("vit encode", "out of memory") : 0;
    int64_t shape[2] = {o->rows, o->cols};
    for (int i = 0; !rc && i < n; i++) {
        if (i) snprintf(names[i], sizeof names[i], "deepstack.%d", i - 1);
        else snprintf(names[i], sizeof names[i], "embeddings");
        t[i] = (vg_st_write_tensor){names[i], VG_DTYPE_F32, 2, shape, i ? o->deepstack[i - 1] : o->embeddings};
    }
    if (!rc) rc = vg_cli_write_safetensors("vit encode", path, t, n);
    free(t);
    free(names);
    return rc;
}

static const char *const k_paths[] = {"eager", "full graph", "piecewise graphs"};

static int summary_json(const encode_args *a, vg_vit *vit, vg_runtime *rt, const vg_vit_output *o,
                        int64_t tokens, const double moments[4], const vg_expected *e,
                        const vg_comparison *c)
{
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "backend", vg_runtime_backend_name(rt));
    cJSON_AddNumberToObject(j, "patches", (double)tokens);
    cJSON_AddNumberToObject(j, "rows", (double)o->rows);
    cJSON_AddNumberToObject(j, "cols", (double)o->cols);
    cJSON_AddNumberToObject(j, "deepstack", o->num_deepstack);
    cJSON_AddNumberToObject(j, "mean", moments[0]);
    cJSON_AddNumberToObject(j, "std", moments[1]);
    cJSON_AddNumberToObject(j, "min", moments[2]);
    cJSON_AddNumberToObject(j, "max", moments[3]);
    cJSON_AddNumberToObject(j, "bucket_tokens", (double)o->run.padded_tokens);
    cJSON_AddStringToObject(j, "path", k_paths[o->run.path]);
    cJSON_AddNumberToObject(j, "device_ms", o->device_ms);
    cJSON_AddStringToObject(j, "output", a->output);
    if (a->stats) cJSON_AddItemToObject(j, "stats", vg_stats_json(vg_vit_runner(vit)));
    if (e) cJSON_AddItemToObject(j, "expected", vg_expected_json(e, c));
    return vg_cli_print_json(j, 0);
}

static int summary(const encode_args *a, vg_vit *vit, vg_runtime *rt, const vg_vit_output *o,
                   int64_t tokens, const vg_expected *e, const vg_comparison *c)
{
    double sum = 0, sq = 0, mn = INFINITY, mx = -INFINITY;
    size_t n = (size_t)(o->rows * o->cols);
    for (size_t i = 0; i < n; i++) {
        double v = o->embeddings[i];
        sum += v, sq += v * v, mn = fmin(mn, v), mx = fmax(mx, v);
    }
    double mean = sum / (double)n, sd = sqrt(fmax(sq / (double)n - mean * mean, 0.0));
    if (a->json) return summary_json(a, vit, rt, o, tokens, (const double[4]){mean, sd, mn, mx}, e, c);
    printf("backend %s: %lld patches -> embeddings [%lld, %lld] F32", vg_runtime_backend_name(rt),
           (long long)tokens, (long long)o->rows, (long long)o->cols);
    if (o->num_deepstack) printf(" and %d deepstack features", o->num_deepstack);
    printf(", written to %s\n", a->output);
    printf("  values: mean %.6g, std %.6g, min %.6g, max %.6g\n", mean, sd, mn, mx);
    printf("  last call: %s, bucket %lld tokens (%lld padding), %d graph launch(es), %d eager "
           "piece(s), device %.3f ms\n", k_paths[o->run.path], (long long)o->run.padded_tokens,
           (long long)(o->run.padded_tokens - tokens), o->run.graph_launches, o->run.eager_pieces,
           o->device_ms);
    if (e) vg_expected_print(e, c);
    return a->stats ? vg_stats_print(stdout, vg_vit_runner(vit)) : 0;
}

/* Load, warm up, encode --repeat times, write, compare, report. */
static int encode(const encode_args *a, const input *in, const vg_expected *e)
{
    vg_runtime_options ro;
    vg_runtime_options_init(&ro);
    ro.backend = a->backend;
    vg_runtime *rt = NULL;
    vg_vit *vit = NULL;
    vg_vit_output o = {0};
    vg_vit_info info;
    vg_progress progress;
    vg_progress_start(&progress, a->quiet);
    int rc = 0;
    if (vg_runtime_open(&ro, &rt) != VG_OK) {
        rc = vg_cli_fail("vit encode", "%s", vg_last_error());
    } else {
        /* the options are the command line's: one the model refuses (capture sizes that are not
         * whole merge units of this model) is a wrong command line; a bad model is a failed input */
        vg_status st = vg_vit_load(rt, a->model, &a->opts, &vit);
        if (st != VG_OK)
            rc = st == VG_ERR_INVALID_ARG ? vg_cli_usage("vit encode", "%s", vg_last_error())
                                          : vg_cli_fail("vit encode", "%s", vg_last_error());
    }
    if (!rc) vg_vit_get_info(vit, &info);
    if (!rc && e) rc = check_expected_shape(e, in, &info);
    /* every call encodes the same input: its bucket is the only one to warm */
    vg_batch_desc like = {.num_tokens = 0};
    int64_t rows = in->pv->shape[0];
    if (!rc && a->warmup &&
        vg_runner_warmup_for(vg_vit_runner(vit), &like, &rows, 1, vg_progress_warmup, &progress) != VG_OK)
        rc = vg_cli_fail("vit encode", "warm-up: %s", vg_last_error());
    /* pixel data may sit unaligned in the mapping: encode copies it, element by element */
    void *pixels = rc ? NULL : malloc(in->pv->nbytes ? in->pv->nbytes : 1);
    if (!rc && !pixels) rc = vg_cli_fail("vit encode", "out of memory");
    if (!rc) memcpy(pixels, in->pv->data, in->pv->nbytes);
    for (int i = 0; !rc && i < a->repeat; i++) {
        vg_progress_show(&progress, "vit encode: call", i, a->repeat);
        vg_free(o.embeddings);
        o.embeddings = NULL;
        if (vg_vit_encode(vit, pixels, in->pv->dtype, in->pv->shape[0], in->pv->shape[1], in->grid,
                          in->n, &o) != VG_OK)
            rc = vg_cli_fail("vit encode", "%s: %s", a->input, vg_last_error());
    }
    vg_progress_end(&progress);
    free(pixels);
    if (!rc) rc = check_finite_outputs(&o);
    if (!rc) rc = write_outputs(a->output, &o);
    if (!rc) vg_out_divert_stdout(a->output); /* the text after the binary: stderr */
    if (!rc) {
        vg_comparison c = {0};
        if (e) c = vg_expected_compare(e, &o, a->tolerance >= 0 ? a->tolerance
                                                 : vg_expected_default_tolerance(info.compute_dtype));
        rc = summary(a, vit, rt, &o, in->pv->shape[0], e, &c);
        if (!rc && e && !c.within)
            rc = vg_cli_fail("vit encode", "the %s NOT within tolerance of %s",
                             o.num_deepstack ? "outputs are" : "embeddings are", e->path);
    }
    vg_free(o.embeddings);
    vg_vit_free(vit);
    vg_runtime_close(rt);
    return rc;
}

int vg_cmd_vit_encode(int argc, char **argv)
{
    encode_args a;
    memset(&a, 0, sizeof a);
    int rc = parse_args(argc, argv, &a);
    if (rc) return rc == VG_OPT_HELP ? 0 : rc;
    input in = {0};
    vg_expected e = {0};
    rc = read_input(a.input, &in);
    if (!rc && a.expected) rc = vg_expected_open(&e, a.expected);
    if (!rc) rc = vg_out_check_result("vit encode", a.output, a.model, a.input, a.expected);
    if (!rc) rc = encode(&a, &in, a.expected ? &e : NULL);
    vg_expected_close(&e);
    free(in.grid);
    vg_st_close(in.file);
    return rc;
}
