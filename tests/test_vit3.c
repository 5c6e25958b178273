/* SPDX-License-Identifier: Apache-2.0 */
/* The Qwen3-VL vision encoder (embeddings and deepstack features), on the backend VG_BACKEND
 * names (kunlun_stub in CI, cuda on the GPU machine):
 *   - Hugging Face's golden outputs (tests/data/qwen3_vl_*) in every graph mode, with capture
 *     sizes that force padding and with the default ladder, captured then replayed;
 *   - two images of different shapes and equal patch counts replaying one graph, both right;
 *   - shapes no fixture has (depth, head_dim 32 to 128 in steps of 8, merge size, position
 *     tables of many sides resampled up and down, deepstack after any block or none, each
 *     activation) against a double-precision host forward (vit3_reference.c), itself first
 *     checked against the fixtures;
 *   - bad inputs and checkpoints; the host-side config and resampling taps. */
#include <math.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "test_util.h"
#include "vg/vg_safetensors.h"
#include "vg/vg_vit.h"
#include "vit/vit_common.h"
#include "vit3_reference.h"

#ifndef TEST_DATA_DIR
#error "TEST_DATA_DIR must point at tests/data"
#endif
#define TINY_DIR TEST_DATA_DIR "/qwen3_vl_tiny"
#define ODD_DIR TEST_DATA_DIR "/qwen3_vl_odd"
#define HD128_DIR TEST_DATA_DIR "/qwen3_vl_hd128"

static vg_model_test_device g_dev; /* the runtime; gpu: tolerances 1e-4 for F32 on kunlun_stub and
                                    * opencl, 1e-3 on cuda and hip; graphs: else every mode is eager */

static double f32_tol(void) { return g_dev.gpu ? 1e-3 : 1e-4; }

/* ---- fixture files ------------------------------------------------------------------------- */

#define MAX_OUT 8 /* embeddings + deepstack features of the fixtures */

typedef struct fixture {
    vg_st_file *in, *expected;
    float *pixels;
    int64_t rows, cols, grid[3 * 8], n;
    int nout;             /* embeddings, deepstack.0, ... */
    float *want[MAX_OUT]; /* copies: the mapping may be unaligned */
    int64_t want_rows, want_cols;
} fixture;

static float *copy_f32(const vg_st_tensor *t)
{
    assert_int_equal(t->dtype, VG_DTYPE_F32);
    float *p = malloc(t->nbytes ? t->nbytes : 1);
    assert_non_null(p);
    memcpy(p, t->data, t->nbytes);
    return p;
}

static void fixture_open(fixture *f, const char *dir, const char *name)
{
    char path[1024];
    memset(f, 0, sizeof *f);
    snprintf(path, sizeof path, "%s/%s.input.safetensors", dir, name);
    VG_CHECK(vg_st_open(path, &f->in));
    snprintf(path, sizeof path, "%s/%s.expected.safetensors", dir, name);
    VG_CHECK(vg_st_open(path, &f->expected));
    const vg_st_tensor *pv = vg_st_find(f->in, "pixel_values"), *g = vg_st_find(f->in, "grid_thw");
    assert_non_null(pv);
    assert_non_null(g);
    f->rows = pv->shape[0], f->cols = pv->shape[1], f->n = g->shape[0];
    assert_true(f->n <= 8);
    memcpy(f->grid, g->data, (size_t)f->n * 3 * sizeof(int64_t));
    f->pixels = copy_f32(pv);
    for (f->nout = 0; f->nout < MAX_OUT; f->nout++) {
        char tn[32];
        if (f->nout) snprintf(tn, sizeof tn, "deepstack.%d", f->nout - 1);
        else snprintf(tn, sizeof tn, "embeddings");
        const vg_st_tensor *e = vg_st_find(f->expected, tn);
        if (!e) break;
        f->want[f->nout] = copy_f32(e);
        f->want_rows = e->shape[0], f->want_cols = e->shape[1];
    }
    assert_true(f->nout >= 1);
}

static void fixture_close(fixture *f)
{
    free(f->pixels);
    for (int i = 0; i < f->nout; i++) free(f->want[i]);
    vg_st_close(f->in);
    vg_st_close(f->expected);
}

static double rel_err(const float *got, const float *want, size_t n)
{
    double err = 0, ref = 1e-30;
    for (size_t i = 0; i < n; i++) {
        if (!isfinite(got[i])) return INFINITY;
        err = fmax(err, fabs((double)got[i] - want[i]));
        ref = fmax(ref, fabs((double)want[i]));
    }
    return err / ref;
}

static double rel_err_d(const float *got, const double *want, size_t n)
{
    double err = 0, ref = 1e-30;
    for (size_t i = 0; i < n; i++) {
        if (!isfinite(got[i])) return INFINITY;
        err = fmax(err, fabs((double)got[i] - want[i]));
        ref = fmax(ref, fabs(want[i]));
    }
    return err / ref;
}

/* Output i of o: the embeddings (0) or deepstack feature i - 1. */
static const float *output(const vg_vit_output *o, int i) { return i ? o->deepstack[i - 1] : o->embeddings; }

/* The largest relative error over every output of o against the fixture's. */
static double worst_err(const vg_vit_output *o, const fixture *f)
{
    assert_int_equal(o->num_deepstack, f->nout - 1);
    double worst = 0;
    for (int i = 0; i < f->nout; i++)
        worst = fmax(worst, rel_err(output(o, i), f->want[i], (size_t)(o->rows * o->cols)));
    return worst;
}

static vg_vit *load_opts(const char *dir, const vg_vit_options *o)
{
    char path[1024];
    struct stat sb;
    snprintf(path, sizeof path, "%s/model", dir);
    if (stat(path, &sb) != 0) snprintf(path, sizeof path, "%s", dir);
    vg_vit *v = NULL;
    VG_CHECK(vg_vit_load(g_dev.rt, path, o, &v));
    return v;
}

static vg_vit *load(const char *dir, vg_graph_mode mode, const int64_t *sizes, int nsizes)
{
    vg_vit_options o;
    vg_vit_options_init(&o);
    o.mode = mode;
    o.capture_sizes = sizes;
    o.num_capture_sizes = nsizes;
    return load_opts(dir, &o);
}

static vg_vit_output encode(vg_vit *v, const fixture *f)
{
    vg_vit_output o;
    VG_CHECK(vg_vit_encode(v, f->pixels, VG_DTYPE_F32, f->rows, f->cols, f->grid, f->n, &o));
    assert_int_equal(o.rows, f->want_rows);
    assert_int_equal(o.cols, f->want_cols);
    return o;
}

/* capture sizes that never equal a fixture's patch count, so graphs always pad */
static const int64_t k_padding_sizes[] = {72, 136, 264, 360};
static const vg_graph_mode k_modes[] = {VG_MODE_NONE, VG_MODE_PIECEWISE, VG_MODE_FULL,
                                        VG_MODE_FULL_AND_PIECEWISE};

static void check_case(const char *dir, const char *name, double tol)
{
    fixture f;
    fixture_open(&f, dir, name);
    for (int k = 0; k < 4; k++) {
        for (int set = 0; set < 2; set++) { /* the padding sizes, then the default ladder */
            vg_vit *v = set ? load(dir, k_modes[k], NULL, 0) : load(dir, k_modes[k], k_padding_sizes, 4);
            for (int call = 0; call < 2; call++) { /* capture, then replay */
                vg_vit_output o = encode(v, &f);
                double e = worst_err(&o, &f);
                if (e > tol)
                    print_message("%s/%s mode %s sizes %d call %d: rel err %.3g > %.3g\n", dir, name,
                                  vg_graph_mode_name(k_modes[k]), set, call, e, tol);
                assert_true(e <= tol);
                if (k_modes[k] != VG_MODE_NONE && !g_dev.graphs) { /* downgraded to eager, logged */
                    assert_true(o.run.captures == 0 && o.run.graph_launches == 0);
                } else if (k_modes[k] != VG_MODE_NONE) {
                    assert_true(o.run.padded_tokens > f.rows || set == 1);
                    assert_true(call == 0 ? o.run.captures > 0 : o.run.captures == 0);
                    assert_true(call == 0 || o.run.graph_launches > 0);
                }
                if (k_modes[k] == VG_MODE_FULL && call == 1 && g_dev.graphs) /* patch embedding to mergers: one graph */
                    assert_true(o.run.path == VG_RUN_FULL && o.run.graph_launches == 1 &&
                                o.run.eager_pieces == 0);
                vg_free(o.embeddings);
            }
            VG_CHECK(vg_vit_free(v));
        }
    }
    fixture_close(&f);
}

static void test_one_image(void **s) { (void)s; check_case(TINY_DIR, "one_image", f32_tol()); }
static void test_two_images(void **s) { (void)s; check_case(TINY_DIR, "two_images", f32_tol()); }
static void test_video(void **s) { (void)s; check_case(TINY_DIR, "video", f32_tol()); }
static void test_wide_image(void **s) { (void)s; check_case(TINY_DIR, "wide_image", f32_tol()); }
/* head_dim 48, intermediate 100, 7 x 7 table down and up, deepstack after blocks 2 and 0 */
static void test_odd_up_and_down(void **s) { (void)s; check_case(ODD_DIR, "up_and_down", f32_tol()); }
static void test_odd_video(void **s) { (void)s; check_case(ODD_DIR, "video", f32_tol()); }
/* head_dim 128, a 2 x 2 table, deepstack after the last block, erf GELU, rope_theta 500 */
static void test_hd128(void **s) { (void)s; check_case(HD128_DIR, "two_images", f32_tol()); }

/* BF16 compute on the F32 checkpoint. */
static void test_bf16_compute(void **state)
{
    (void)state;
    fixture f;
    fixture_open(&f, TINY_DIR, "two_images");
    vg_vit_options o;
    vg_vit_options_init(&o);
    o.mode = VG_MODE_FULL;
    o.capture_sizes = k_padding_sizes;
    o.num_capture_sizes = 4;
    o.compute_dtype = VG_DTYPE_BF16;
    vg_vit *v = load_opts(TINY_DIR, &o);
    for (int call = 0; call < 2; call++) {
        vg_vit_output out = encode(v, &f);
        double e = worst_err(&out, &f);
        if (e > 3e-2) print_message("bf16: rel err %.3g\n", e);
        assert_true(e <= 3e-2);
        vg_free(out.embeddings);
    }
    VG_CHECK(vg_vit_free(v));
    fixture_close(&f);
}

static void test_graph_equals_eager(void **state)
{
    (void)state;
    fixture f;
    fixture_open(&f, TINY_DIR, "two_images");
    vg_vit *eager = load(TINY_DIR, VG_MODE_NONE, NULL, 0);
    vg_vit_output e = encode(eager, &f);
    for (int k = 1; k < 4; k++) {
        vg_vit *g = load(TINY_DIR, k_modes[k], k_padding_sizes, 4);
        for (int call = 0; call < 2; call++) {
            vg_vit_output o = encode(g, &f);
            for (int i = 0; i < f.nout; i++) {
                double d = rel_err(output(&o, i), output(&e, i), (size_t)(o.rows * o.cols));
                if (d > 1e-6) print_message("mode %s output %d: graph vs eager %.3g\n",
                                            vg_graph_mode_name(k_modes[k]), i, d);
                assert_true(d <= 1e-6);
            }
            vg_free(o.embeddings);
        }
        VG_CHECK(vg_vit_free(g));
    }
    vg_free(e.embeddings);
    VG_CHECK(vg_vit_free(eager));
    fixture_close(&f);
}

/* (1, 16, 16) and (1, 8, 32): 256 patches each, so one bucket and one graph; the second call
 * replays the first's graph with its own positions, taps and segments, and both are right. Then
 * the first again, and a split of it into two images, against an eager run. */
static void test_same_tokens_one_graph(void **state)
{
    (void)state;
    fixture sq, wide;
    fixture_open(&sq, TINY_DIR, "one_image");
    fixture_open(&wide, TINY_DIR, "wide_image");
    assert_int_equal(sq.rows, wide.rows);
    const int64_t sizes[] = {264};
    for (int k = 1; k < 4; k++) {
        vg_vit *g = load(TINY_DIR, k_modes[k], sizes, 1);
        vg_vit_output a = encode(g, &sq), b = encode(g, &wide), c = encode(g, &sq);
        assert_true(g_dev.graphs ? a.run.captures > 0 : a.run.captures == 0);
        assert_int_equal(b.run.captures, 0); /* replayed the graph of the first call */
        assert_int_equal(c.run.captures, 0);
        assert_true(g_dev.graphs ? b.run.graph_launches > 0 && c.run.graph_launches > 0
                             : b.run.graph_launches == 0 && c.run.graph_launches == 0);
        assert_true(worst_err(&a, &sq) <= f32_tol());
        assert_true(worst_err(&b, &wide) <= f32_tol());
        assert_true(worst_err(&c, &sq) <= f32_tol());
        assert_true(rel_err(a.embeddings, b.embeddings, (size_t)(a.rows * a.cols)) > 1e-2);
        /* the same pixels split into two (1, 8, 16) images: other segments, positions, taps */
        static const int64_t split[6] = {1, 8, 16, 1, 8, 16};
        vg_vit *eager = load(TINY_DIR, VG_MODE_NONE, NULL, 0);
        vg_vit_output s, ref;
        VG_CHECK(vg_vit_encode(g, sq.pixels, VG_DTYPE_F32, 256, sq.cols, split, 2, &s));
        VG_CHECK(vg_vit_encode(eager, sq.pixels, VG_DTYPE_F32, 256, sq.cols, split, 2, &ref));
        assert_int_equal(s.run.captures, 0);
        for (int i = 0; i < 3; i++)
            assert_true(rel_err(output(&s, i), output(&ref, i), (size_t)(s.rows * s.cols)) <= 1e-6);
        assert_true(rel_err(s.embeddings, a.embeddings, (size_t)(s.rows * s.cols)) > 1e-3);
        vg_free(a.embeddings), vg_free(b.embeddings), vg_free(c.embeddings);
        vg_free(s.embeddings), vg_free(ref.embeddings);
        VG_CHECK(vg_vit_free(g));
        VG_CHECK(vg_vit_free(eager));
    }
    fixture_close(&sq);
    fixture_close(&wide);
}

/* A video and two images packed into one call give each one's own outputs, in order. */
static void test_packed(void **state)
{
    (void)state;
    fixture parts[3];
    fixture_open(&parts[0], TINY_DIR, "video");
    fixture_open(&parts[1], TINY_DIR, "wide_image");
    fixture_open(&parts[2], TINY_DIR, "two_images");
    int64_t rows = 0, out_rows = 0, grid[3 * 4], n = 0, cols = parts[0].cols, oc = parts[0].want_cols;
    for (int i = 0; i < 3; i++) rows += parts[i].rows, out_rows += parts[i].want_rows;
    float *pixels = malloc((size_t)(rows * cols) * 4), *want[3];
    assert_non_null(pixels);
    for (int k = 0; k < 3; k++) assert_non_null(want[k] = malloc((size_t)(out_rows * oc) * 4));
    int64_t r = 0, o = 0;
    for (int i = 0; i < 3; i++) {
        memcpy(pixels + r * cols, parts[i].pixels, (size_t)(parts[i].rows * cols) * 4);
        for (int k = 0; k < 3; k++)
            memcpy(want[k] + o * oc, parts[i].want[k], (size_t)(parts[i].want_rows * oc) * 4);
        memcpy(grid + 3 * n, parts[i].grid, (size_t)parts[i].n * 3 * sizeof(int64_t));
        n += parts[i].n, r += parts[i].rows, o += parts[i].want_rows;
    }
    vg_vit *v = load(TINY_DIR, VG_MODE_FULL, NULL, 0);
    vg_vit_output out;
    VG_CHECK(vg_vit_encode(v, pixels, VG_DTYPE_F32, rows, cols, grid, n, &out));
    assert_int_equal(out.rows, out_rows);
    assert_int_equal(out.num_deepstack, 2);
    for (int k = 0; k < 3; k++) assert_true(rel_err(output(&out, k), want[k], (size_t)(out_rows * oc)) <= f32_tol());
    vg_free(out.embeddings);
    VG_CHECK(vg_vit_free(v));
    free(pixels);
    for (int k = 0; k < 3; k++) free(want[k]);
    for (int i = 0; i < 3; i++) fixture_close(&parts[i]);
}

static void test_bad_inputs(void **state)
{
    (void)state;
    fixture f;
    fixture_open(&f, TINY_DIR, "one_image");
    vg_vit *v = load(TINY_DIR, VG_MODE_FULL, NULL, 0);
    vg_vit_output o;
    const int64_t good[3] = {1, 16, 16}, odd_h[3] = {1, 15, 16}, odd_w[3] = {1, 16, 7};
    VG_CHECK_FAILS(vg_vit_encode(v, f.pixels, VG_DTYPE_F32, 250, f.cols, good, 1, &o),
                   VG_ERR_INVALID_ARG, "pixel_values has 250 rows, but grid_thw describes");
    VG_CHECK_FAILS(vg_vit_encode(v, f.pixels, VG_DTYPE_F32, 240, f.cols, odd_h, 1, &o),
                   VG_ERR_INVALID_ARG, "must be multiples of spatial_merge_size 2");
    VG_CHECK_FAILS(vg_vit_encode(v, f.pixels, VG_DTYPE_F32, 112, f.cols, odd_w, 1, &o),
                   VG_ERR_INVALID_ARG, "must be multiples of spatial_merge_size 2");
    VG_CHECK_FAILS(vg_vit_encode(v, f.pixels, VG_DTYPE_F32, 256, 1176, good, 1, &o),
                   VG_ERR_INVALID_ARG, "pixel_values has 1176 columns");
    VG_CHECK_FAILS(vg_vit_encode(v, f.pixels, VG_DTYPE_F32, 256, f.cols + 1, good, 1, &o),
                   VG_ERR_INVALID_ARG, "3 x 2 x 16^2 = 1536");
    VG_CHECK_FAILS(vg_vit_encode(v, f.pixels, VG_DTYPE_F32, 0, f.cols, good, 1, &o),
                   VG_ERR_INVALID_ARG, "empty");
    VG_CHECK_FAILS(vg_vit_encode(v, f.pixels, VG_DTYPE_F32, 256, f.cols, NULL, 1, &o),
                   VG_ERR_INVALID_ARG, "grid_thw");
    float *bad = malloc((size_t)(f.rows * f.cols) * sizeof(float));
    assert_non_null(bad);
    memcpy(bad, f.pixels, (size_t)(f.rows * f.cols) * sizeof(float));
    bad[3 * f.cols + 7] = NAN;
    VG_CHECK_FAILS(vg_vit_encode(v, bad, VG_DTYPE_F32, f.rows, f.cols, f.grid, f.n, &o),
                   VG_ERR_INVALID_ARG, "row 3, column 7 is NaN");
    free(bad);
    o = encode(v, &f); /* and the encoder still works */
    assert_true(worst_err(&o, &f) <= f32_tol());
    vg_free(o.embeddings);
    VG_CHECK(vg_vit_free(v));
    fixture_close(&f);
}

/* ---- checkpoints that are wrong in one way each ---------------------------------------------- */

static char g_tmp[256];

static void write_file(const char *dir, const char *name, const char *text)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *fp = fopen(path, "w");
    assert_non_null(fp);
    fputs(text, fp);
    fclose(fp);
}

static void make_model_dir(const char *config_json, const char *weights)
{
    snprintf(g_tmp, sizeof g_tmp, "/tmp/vg_test_vit3_XXXXXX");
    assert_non_null(mkdtemp(g_tmp));
    write_file(g_tmp, "config.json", config_json);
    if (weights) {
        char path[512];
        snprintf(path, sizeof path, "%s/model.safetensors", g_tmp);
        assert_int_equal(symlink(weights, path), 0);
    }
}

static void remove_model_dir(void)
{
    char path[512];
    const char *files[] = {"config.json", "model.safetensors"};
    for (int i = 0; i < 2; i++) {
        snprintf(path, sizeof path, "%s/%s", g_tmp, files[i]);
        unlink(path);
    }
    rmdir(g_tmp);
}

/* The tiny fixture's config with member `key` set to `value` (JSON text), replaced or added. */
static const char *tiny_config(const char *top_type, const char *key, const char *value)
{
    static const char *const members[][2] = {
        {"model_type", "\"qwen3_vl\""}, {"depth", "4"}, {"hidden_size", "128"},
        {"intermediate_size", "192"}, {"num_heads", "4"}, {"out_hidden_size", "96"},
        {"patch_size", "16"}, {"hidden_act", "\"gelu_pytorch_tanh\""},
        {"num_position_embeddings", "256"}, {"deepstack_visual_indexes", "[1, 2]"},
    };
    static char buf[2048];
    int n = snprintf(buf, sizeof buf, "{\"model_type\": \"%s\", \"vision_config\": {", top_type);
    int found = 0, written = 0;
    for (size_t i = 0; i < sizeof members / sizeof *members; i++) {
        int hit = strcmp(members[i][0], key) == 0;
        found |= hit;
        if (hit && !value) continue; /* removed */
        n += snprintf(buf + n, sizeof buf - (size_t)n, "%s\"%s\": %s", written++ ? ", " : "",
                      members[i][0], hit ? value : members[i][1]);
    }
    if (!found) n += snprintf(buf + n, sizeof buf - (size_t)n, ", \"%s\": %s", key, value);
    snprintf(buf + n, sizeof buf - (size_t)n, "}}");
    return buf;
}

static void expect_load_failure(const char *config, vg_status want, const char *needle)
{
    make_model_dir(config, TINY_DIR "/model/model.safetensors");
    vg_vit *v = (vg_vit *)0x1;
    VG_CHECK_FAILS(vg_vit_load(g_dev.rt, g_tmp, NULL, &v), want, needle);
    assert_null(v);
    remove_model_dir();
}

static void test_load_errors(void **state)
{
    (void)state;
    /* the tiny config as it is loads; the cases below change one thing each */
    make_model_dir(tiny_config("qwen3_vl", "model_type", "\"qwen3_vl\""), TINY_DIR "/model/model.safetensors");
    vg_vit *v = NULL;
    VG_CHECK(vg_vit_load(g_dev.rt, g_tmp, NULL, &v));
    VG_CHECK(vg_vit_free(v));
    remove_model_dir();
    expect_load_failure(tiny_config("qwen3_vl", "model_type", "\"siglip_vision_model\""),
                        VG_ERR_UNSUPPORTED, "vision_config: model_type 'siglip_vision_model' is not supported");
    expect_load_failure(tiny_config("llava", "model_type", "\"qwen3_vl\""), VG_ERR_UNSUPPORTED,
                        "model_type 'llava' is not supported");
    expect_load_failure(tiny_config("qwen2_5_vl", "model_type", "\"qwen3_vl\""), VG_ERR_FORMAT,
                        "name different vision towers");
    /* no vision_config model_type: the top-level one picks Qwen2.5-VL (whose windows do not fit) */
    expect_load_failure(tiny_config("qwen2_5_vl", "model_type", NULL), VG_ERR_FORMAT,
                        "window_size 112 is not a multiple of spatial_merge_size x patch_size");
    expect_load_failure(tiny_config("qwen3_vl", "num_position_embeddings", "250"), VG_ERR_FORMAT,
                        "num_position_embeddings 250 is not a square");
    expect_load_failure(tiny_config("qwen3_vl", "num_position_embeddings", "225"), VG_ERR_FORMAT,
                        "tensor 'model.visual.pos_embed.weight' has shape [256, 128], the model expects [225, 128]");
    expect_load_failure(tiny_config("qwen3_vl", "deepstack_visual_indexes", "[1, 4]"), VG_ERR_FORMAT,
                        "deepstack_visual_indexes holds 4, not a block index below depth 4");
    expect_load_failure(tiny_config("qwen3_vl", "deepstack_visual_indexes", "[2, 2]"), VG_ERR_FORMAT,
                        "names block 2 twice");
    expect_load_failure(tiny_config("qwen3_vl", "deepstack_visual_indexes", "[1, 2, 3]"), VG_ERR_NOT_FOUND,
                        "tensor 'model.visual.deepstack_merger_list.2.norm.weight' is missing");
    expect_load_failure(tiny_config("qwen3_vl", "deepstack_visual_indexes", "3"), VG_ERR_FORMAT,
                        "deepstack_visual_indexes must be an array");
    expect_load_failure(tiny_config("qwen3_vl", "hidden_act", "\"relu\""), VG_ERR_UNSUPPORTED,
                        "hidden_act 'relu' is not supported");
    expect_load_failure(tiny_config("qwen3_vl", "rope_parameters", "{\"rope_type\": \"default\"}"),
                        VG_ERR_UNSUPPORTED, "rope_type must be \"axial\"");
    expect_load_failure(tiny_config("qwen3_vl", "num_heads", "3"), VG_ERR_FORMAT,
                        "hidden_size 128 is not divisible by num_heads 3");
    expect_load_failure(tiny_config("qwen3_vl", "intermediate_size", "200"), VG_ERR_FORMAT,
                        "'model.visual.blocks.0.mlp.linear_fc1.weight' has shape [192, 128], the model expects [200, 128]");
    expect_load_failure(tiny_config("qwen3_vl", "patch_size", "14"), VG_ERR_FORMAT,
                        "'model.visual.patch_embed.proj.weight' has shape [128, 3, 2, 16, 16]");
}

/* ---- host side: config, resampling taps ------------------------------------------------------ */

static vg_status parse(const char *json, vit_cfg *c)
{
    cJSON *root = cJSON_Parse(json);
    assert_non_null(root);
    vg_status st = vit_config_parse(root, "test", c);
    cJSON_Delete(root);
    return st;
}

static void test_config(void **state)
{
    (void)state;
    vit_cfg c;
    /* Hugging Face's defaults */
    VG_CHECK(parse("{\"model_type\": \"qwen3_vl\", \"vision_config\": {\"depth\": 27, \"hidden_size\": "
                   "1152, \"num_heads\": 16, \"intermediate_size\": 4304, \"out_hidden_size\": 4096}}", &c));
    assert_int_equal(c.family, VIT_QWEN3);
    assert_int_equal(c.patch, 16);
    assert_int_equal(c.patch_dim, 1536);
    assert_int_equal(c.act, VG_ACT_GELU_TANH);
    assert_int_equal(c.num_pos, 2304);
    assert_int_equal(c.pos_side, 48);
    assert_int_equal(c.num_deepstack, 3);
    assert_int_equal(c.deepstack_block[0], 8);
    assert_int_equal(c.deepstack_block[2], 24);
    assert_true(c.theta == 10000.0f && c.eps == 1e-6f);
    assert_int_equal(c.head_dim, 72);
    assert_int_equal(c.inter_pad, 4304);
    /* the vision config's own type alone; no deepstack at all; rope_theta the old way */
    VG_CHECK(parse("{\"vision_config\": {\"model_type\": \"qwen3_vl_vision\", \"depth\": 2, \"hidden_size\": "
                   "64, \"num_heads\": 1, \"intermediate_size\": 10, \"out_hidden_size\": 8, "
                   "\"num_position_embeddings\": 1, \"deepstack_visual_indexes\": [], \"rope_theta\": 50, "
                   "\"hidden_act\": \"quick_gelu\"}}", &c));
    assert_int_equal(c.family, VIT_QWEN3);
    assert_int_equal(c.num_deepstack, 0);
    assert_int_equal(c.pos_side, 1);
    assert_int_equal(c.inter_pad, 16);
    assert_int_equal(c.act, VG_ACT_QUICK_GELU);
    assert_true(c.theta == 50.0f);
    /* neither names a family: Qwen2.5-VL, as before */
    VG_CHECK(parse("{\"vision_config\": {\"depth\": 2, \"hidden_size\": 64, \"num_heads\": 1, "
                   "\"intermediate_size\": 10, \"out_hidden_size\": 8}}", &c));
    assert_int_equal(c.family, VIT_QWEN2_5);
    assert_int_equal(c.patch, 14);
    VG_CHECK(parse("{\"model_type\": \"qwen3_vl_moe\", \"vision_config\": {\"depth\": 25, \"hidden_size\": "
                   "64, \"num_heads\": 2, \"intermediate_size\": 10, \"out_hidden_size\": 8}}", &c));
    assert_int_equal(c.family, VIT_QWEN3);
}

/* The taps reproduce F.interpolate(bilinear, align_corners=True): the corners map onto the
 * table's corners, the weights sum to one, and they agree with a double-precision evaluation. */
static void test_pos_taps(void **state)
{
    (void)state;
    static const int sides[] = {1, 2, 3, 7, 16, 48};
    static const int64_t sizes[] = {1, 2, 3, 5, 8, 14, 32, 100};
    for (size_t a = 0; a < sizeof sides / sizeof *sides; a++)
        for (size_t b = 0; b < sizeof sizes / sizeof *sizes; b++)
            for (size_t d = 0; d < sizeof sizes / sizeof *sizes; d++) {
                int side = sides[a];
                int64_t h = sizes[b], w = sizes[d];
                for (int64_t r = 0; r < h; r++)
                    for (int64_t c = 0; c < w; c++) {
                        int32_t idx[VIT3_TAPS];
                        float wt[VIT3_TAPS];
                        vit3_pos_taps(side, h, w, r, c, idx, wt);
                        double sum = 0, er = h > 1 ? (double)r * (side - 1) / (double)(h - 1) : 0;
                        double ec = w > 1 ? (double)c * (side - 1) / (double)(w - 1) : 0;
                        double got_r = 0, got_c = 0;
                        for (int k = 0; k < VIT3_TAPS; k++) {
                            assert_true(idx[k] >= 0 && idx[k] < side * side);
                            assert_true(wt[k] >= 0.0f && wt[k] <= 1.0f);
                            sum += wt[k];
                            got_r += wt[k] * (idx[k] / side), got_c += wt[k] * (idx[k] % side);
                        }
                        assert_true(fabs(sum - 1.0) < 1e-6);
                        /* the weighted mean of the taps is the source coordinate */
                        assert_true(fabs(got_r - er) < 1e-5 && fabs(got_c - ec) < 1e-5);
                    }
                int32_t idx[VIT3_TAPS];
                float wt[VIT3_TAPS];
                vit3_pos_taps(side, h, w, h - 1, w - 1, idx, wt); /* the last corner */
                if (h > 1 && w > 1) assert_true(idx[0] == side * side - 1 && wt[0] == 1.0f);
            }
}

/* ---- the host reference and random checkpoints -------------------------------------------------- */

/* Tensors of a tower held in memory, by name under the tower. */
#define MAX_TENSORS 512
typedef struct tensor_set {
    int n;
    char *names[MAX_TENSORS];
    float *data[MAX_TENSORS];
    int ndim[MAX_TENSORS];
    int64_t shape[MAX_TENSORS][5];
    const char *prefix; /* how the checkpoint names them: "model.visual." or "visual." */
} tensor_set;

static const float *set_get(void *user, const char *name)
{
    const tensor_set *s = user;
    for (int i = 0; i < s->n; i++)
        if (strcmp(s->names[i], name) == 0) return s->data[i];
    return NULL;
}

static void set_free(tensor_set *s)
{
    for (int i = 0; i < s->n; i++) free(s->names[i]), free(s->data[i]);
    s->n = 0;
}

/* The tower tensors of a checkpoint file (F32). */
static void set_from_file(tensor_set *s, const char *path, const char *prefix)
{
    vg_st_file *f = NULL;
    VG_CHECK(vg_st_open(path, &f));
    memset(s, 0, sizeof *s);
    size_t pl = strlen(prefix);
    for (int i = 0; i < vg_st_count(f); i++) {
        const vg_st_tensor *t = vg_st_at(f, i);
        if (strncmp(t->name, prefix, pl) != 0) continue;
        assert_true(s->n < MAX_TENSORS);
        s->names[s->n] = strdup(t->name + pl);
        s->data[s->n++] = copy_f32(t);
    }
    vg_st_close(f);
}

static uint64_t g_rng = 88172645463325252ull;
static double urand(void) /* uniform in [-1, 1) */
{
    g_rng ^= g_rng << 13, g_rng ^= g_rng >> 7, g_rng ^= g_rng << 17;
    return (double)(g_rng >> 11) / 4503599627370496.0 - 1.0;
}

static void set_add(tensor_set *s, const char *name, int ndim, const int64_t *shape, int kind)
{
    assert_true(s->n < MAX_TENSORS);
    int64_t numel = 1;
    for (int i = 0; i < ndim; i++) numel *= shape[i];
    float *d = malloc((size_t)numel * sizeof *d);
    assert_non_null(d);
    double fan_in = ndim > 1 ? (double)(numel / shape[0]) : 1.0;
    for (int64_t i = 0; i < numel; i++) /* 0: weight, 1: LayerNorm weight, 2: bias */
        d[i] = (float)(kind == 1 ? 1.0 + 0.2 * urand() : kind == 2 ? 0.1 * urand() : 1.7 * urand() / sqrt(fan_in));
    s->names[s->n] = strdup(name);
    s->data[s->n] = d;
    s->ndim[s->n] = ndim;
    memcpy(s->shape[s->n], shape, (size_t)ndim * sizeof(int64_t));
    s->n++;
}

#define ADD(kind, name, ...)                                                          \
    set_add(s, name, (int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)),       \
            (const int64_t[]){__VA_ARGS__}, kind)

static void add_merger(tensor_set *s, const char *prefix, int64_t norm, int64_t mh, int64_t out)
{
    char n[128];
    snprintf(n, sizeof n, "%snorm.weight", prefix), ADD(1, n, norm);
    snprintf(n, sizeof n, "%snorm.bias", prefix), ADD(2, n, norm);
    snprintf(n, sizeof n, "%slinear_fc1.weight", prefix), ADD(0, n, mh, mh);
    snprintf(n, sizeof n, "%slinear_fc1.bias", prefix), ADD(2, n, mh);
    snprintf(n, sizeof n, "%slinear_fc2.weight", prefix), ADD(0, n, out, mh);
    snprintf(n, sizeof n, "%slinear_fc2.bias", prefix), ADD(2, n, out);
}

/* Random weights of a tower of config c, named as transformers names them. */
static void set_random(tensor_set *s, const ref3_config *c)
{
    memset(s, 0, sizeof *s);
    int64_t h = c->hidden, mh = h * c->merge * c->merge;
    ADD(0, "patch_embed.proj.weight", h, c->in_ch, c->tpatch, c->patch, c->patch);
    ADD(2, "patch_embed.proj.bias", h);
    ADD(0, "pos_embed.weight", c->num_pos, h);
    for (int b = 0; b < c->depth; b++) {
        char n[128];
#define BLK(kind, what, ...) (snprintf(n, sizeof n, "blocks.%d.%s", b, what), ADD(kind, n, __VA_ARGS__))
        BLK(1, "norm1.weight", h), BLK(2, "norm1.bias", h);
        BLK(0, "attn.qkv.weight", 3 * h, h), BLK(2, "attn.qkv.bias", 3 * h);
        BLK(0, "attn.proj.weight", h, h), BLK(2, "attn.proj.bias", h);
        BLK(1, "norm2.weight", h), BLK(2, "norm2.bias", h);
        BLK(0, "mlp.linear_fc1.weight", (int64_t)c->inter, h), BLK(2, "mlp.linear_fc1.bias", (int64_t)c->inter);
        BLK(0, "mlp.linear_fc2.weight", h, (int64_t)c->inter), BLK(2, "mlp.linear_fc2.bias", h);
#undef BLK
    }
    add_merger(s, "merger.", h, mh, c->out_hidden);
    for (int k = 0; k < c->num_deepstack; k++) {
        char p[64];
        snprintf(p, sizeof p, "deepstack_merger_list.%d.", k);
        add_merger(s, p, mh, mh, c->out_hidden);
    }
}

static const char *act_name(vg_activation a)
{
    return a == VG_ACT_GELU_ERF ? "gelu" : a == VG_ACT_SILU ? "silu" : a == VG_ACT_QUICK_GELU ? "quick_gelu"
                                                                                                  : "gelu_pytorch_tanh";
}

/* A model directory for the set and its config, in g_tmp. */
static void write_checkpoint(const tensor_set *s, const ref3_config *c)
{
    char json[2048], ds[512] = "";
    for (int k = 0; k < c->num_deepstack; k++)
        snprintf(ds + strlen(ds), sizeof ds - strlen(ds), "%s%d", k ? ", " : "", c->deepstack[k]);
    snprintf(json, sizeof json,
             "{\"model_type\": \"qwen3_vl\", \"vision_config\": {\"model_type\": \"qwen3_vl\", "
             "\"depth\": %d, \"hidden_size\": %d, \"num_heads\": %d, \"intermediate_size\": %d, "
             "\"out_hidden_size\": %d, \"patch_size\": %d, \"temporal_patch_size\": %d, "
             "\"spatial_merge_size\": %d, \"in_channels\": %d, \"hidden_act\": \"%s\", "
             "\"num_position_embeddings\": %d, \"deepstack_visual_indexes\": [%s], "
             "\"rope_parameters\": {\"rope_type\": \"axial\", \"rope_theta\": %g}}}",
             c->depth, c->hidden, c->heads, c->inter, c->out_hidden, c->patch, c->tpatch, c->merge,
             c->in_ch, act_name(c->act), c->num_pos, ds, c->theta);
    make_model_dir(json, NULL);
    vg_st_write_tensor *t = calloc((size_t)s->n, sizeof *t);
    char **names = calloc((size_t)s->n, sizeof *names);
    assert_true(t && names);
    for (int i = 0; i < s->n; i++) {
        names[i] = malloc(strlen(s->prefix) + strlen(s->names[i]) + 1);
        assert_non_null(names[i]);
        sprintf(names[i], "%s%s", s->prefix, s->names[i]);
        t[i] = (vg_st_write_tensor){names[i], VG_DTYPE_F32, s->ndim[i], s->shape[i], s->data[i]};
    }
    char path[512];
    snprintf(path, sizeof path, "%s/model.safetensors", g_tmp);
    VG_CHECK(vg_st_write(path, t, s->n));
    for (int i = 0; i < s->n; i++) free(names[i]);
    free(names), free(t);
}

/* The reference against a fixture's expected outputs: the reference is right before it judges. */
static void reference_vs_fixture(const char *dir, const char *name, const char *prefix,
                                 const ref3_config *c)
{
    fixture f;
    fixture_open(&f, dir, name);
    tensor_set s;
    char path[1024];
    snprintf(path, sizeof path, "%s/model/model.safetensors", dir);
    set_from_file(&s, path, prefix);
    size_t n = (size_t)(f.want_rows * f.want_cols);
    double *out[MAX_OUT];
    for (int i = 0; i < f.nout; i++) assert_non_null(out[i] = malloc(n * sizeof(double)));
    assert_int_equal(ref3_forward(c, set_get, &s, f.pixels, f.grid, f.n, out[0], out + 1), 0);
    for (int i = 0; i < f.nout; i++) {
        double worst = 0, ref = 1e-30;
        for (size_t j = 0; j < n; j++) worst = fmax(worst, fabs(out[i][j] - f.want[i][j])), ref = fmax(ref, fabs(out[i][j]));
        if (worst / ref > 1e-5) print_message("reference vs %s/%s output %d: %.3g\n", dir, name, i, worst / ref);
        assert_true(worst / ref <= 1e-5);
        free(out[i]);
    }
    set_free(&s);
    fixture_close(&f);
}

static void test_reference_matches_fixtures(void **state)
{
    (void)state;
    ref3_config tiny = {.depth = 4, .hidden = 128, .heads = 4, .inter = 192, .out_hidden = 96,
                        .patch = 16, .tpatch = 2, .merge = 2, .in_ch = 3, .num_pos = 256,
                        .num_deepstack = 2, .deepstack = {1, 2}, .act = VG_ACT_GELU_TANH,
                        .theta = 10000};
    reference_vs_fixture(TINY_DIR, "two_images", "model.visual.", &tiny);
    reference_vs_fixture(TINY_DIR, "video", "model.visual.", &tiny);
    ref3_config odd = {.depth = 3, .hidden = 96, .heads = 2, .inter = 100, .out_hidden = 40,
                       .patch = 8, .tpatch = 2, .merge = 2, .in_ch = 3, .num_pos = 49,
                       .num_deepstack = 2, .deepstack = {2, 0}, .act = VG_ACT_GELU_TANH,
                       .theta = 10000};
    reference_vs_fixture(ODD_DIR, "up_and_down", "visual.", &odd);
    ref3_config hd128 = {.depth = 2, .hidden = 128, .heads = 1, .inter = 64, .out_hidden = 32,
                         .patch = 8, .tpatch = 2, .merge = 2, .in_ch = 3, .num_pos = 4,
                         .num_deepstack = 1, .deepstack = {1}, .act = VG_ACT_GELU_ERF,
                         .theta = 500};
    reference_vs_fixture(HD128_DIR, "two_images", "model.visual.", &hd128);
}

/* One random tower against the reference: FULL with a padding bucket, then eager. */
static void random_case(const ref3_config *c, const int64_t *grid, int n, vg_dtype dt, double tol)
{
    tensor_set s;
    set_random(&s, c);
    s.prefix = (c->depth % 2) ? "model.visual." : "visual.";
    write_checkpoint(&s, c);
    int64_t S = 0, unit = (int64_t)c->merge * c->merge;
    for (int g = 0; g < n; g++) S += grid[3 * g] * grid[3 * g + 1] * grid[3 * g + 2];
    int64_t pdim = (int64_t)c->in_ch * c->tpatch * c->patch * c->patch;
    float *pix = malloc((size_t)(S * pdim) * sizeof *pix);
    assert_non_null(pix);
    for (int64_t i = 0; i < S * pdim; i++) pix[i] = (float)urand();
    size_t nout = (size_t)(S / unit) * (size_t)c->out_hidden;
    double *want[1 + REF3_MAX_DEEPSTACK];
    for (int k = 0; k <= c->num_deepstack; k++) assert_non_null(want[k] = malloc(nout * sizeof(double)));
    assert_int_equal(ref3_forward(c, set_get, &s, pix, grid, n, want[0], want + 1), 0);
    int64_t bucket = (S / unit + 3) * unit; /* a few units of padding */
    for (int mode = 0; mode < 2; mode++) {
        vg_vit_options o;
        vg_vit_options_init(&o);
        o.mode = mode ? VG_MODE_NONE : VG_MODE_FULL;
        o.capture_sizes = &bucket;
        o.num_capture_sizes = 1;
        o.compute_dtype = dt;
        vg_vit *v = NULL;
        VG_CHECK(vg_vit_load(g_dev.rt, g_tmp, &o, &v));
        for (int call = 0; call < 1 + !mode; call++) {
            vg_vit_output out;
            VG_CHECK(vg_vit_encode(v, pix, VG_DTYPE_F32, S, pdim, grid, n, &out));
            assert_int_equal(out.rows * out.cols, (int64_t)nout);
            assert_int_equal(out.num_deepstack, c->num_deepstack);
            for (int k = 0; k <= c->num_deepstack; k++) {
                double e = rel_err_d(output(&out, k), want[k], nout);
                if (e > tol)
                    print_message("depth %d hidden %d heads %d (head_dim %d) inter %d merge %d "
                                  "table %d act %s deepstack %d, %s, call %d: output %d rel err %.3g > %.3g\n",
                                  c->depth, c->hidden, c->heads, c->hidden / c->heads, c->inter,
                                  c->merge, c->num_pos, act_name(c->act), c->num_deepstack,
                                  mode ? "eager" : "full", call, k, e, tol);
                assert_true(e <= tol);
            }
            if (!mode && call == 1 && g_dev.graphs)
                assert_true(out.run.path == VG_RUN_FULL && out.run.padded_tokens == bucket);
            vg_free(out.embeddings);
        }
        VG_CHECK(vg_vit_free(v));
    }
    for (int k = 0; k <= c->num_deepstack; k++) free(want[k]);
    free(pix);
    set_free(&s);
    remove_model_dir();
}

/* head_dim 32 to 128 in steps of 8, one or two heads, depths 1 to 3, intermediate sizes that
 * need padding, position tables from 1 x 1 to 9 x 9 resampled up and down, deepstack after the
 * first block, the last, both (unsorted) or none, every activation, two rotary bases; images of
 * several shapes and a video in one call. */
static void test_random_shapes(void **state)
{
    (void)state;
    static const int sides[] = {1, 2, 3, 5, 9, 4, 7};
    static const vg_activation acts[] = {VG_ACT_GELU_TANH, VG_ACT_GELU_ERF, VG_ACT_SILU, VG_ACT_QUICK_GELU};
    const int64_t grid[] = {1, 4, 8, 2, 6, 4, 1, 12, 10}; /* 32 + 48 + 120 patches */
    int i = 0;
    for (int hd = 32; hd <= 128; hd += 8, i++) {
        ref3_config c = {.heads = 1 + i % 2, .depth = 1 + i % 3, .patch = 4, .tpatch = 2, .merge = 2,
                         .in_ch = 3, .act = acts[i % 4], .theta = i % 2 ? 100.0 : 10000.0};
        c.hidden = c.heads * hd;
        c.inter = c.hidden + 4 + 8 * (i % 3);
        c.out_hidden = 16 + i;
        c.num_pos = sides[i % 7] * sides[i % 7];
        switch (i % 4) {
        case 0: c.num_deepstack = 1, c.deepstack[0] = 0; break;
        case 1: c.num_deepstack = 1, c.deepstack[0] = c.depth - 1; break;
        case 2: c.num_deepstack = c.depth > 1 ? 2 : 1, c.deepstack[0] = c.depth - 1, c.deepstack[1] = 0; break;
        default: c.num_deepstack = 0; break;
        }
        random_case(&c, grid, 3, VG_DTYPE_F32, f32_tol());
    }
}

/* Merge units of 1 and 3 patches a side (real checkpoints use 2): nothing assumes 2. */
static void test_random_merge_sizes(void **state)
{
    (void)state;
    ref3_config c = {.depth = 2, .hidden = 64, .heads = 1, .inter = 40, .out_hidden = 12, .patch = 4,
                     .tpatch = 1, .merge = 1, .in_ch = 2, .num_pos = 9, .num_deepstack = 1,
                     .deepstack = {0}, .act = VG_ACT_GELU_TANH, .theta = 10000};
    const int64_t g1[] = {1, 3, 5, 2, 4, 2};
    random_case(&c, g1, 2, VG_DTYPE_F32, f32_tol());
    c.merge = 3, c.num_pos = 16, c.heads = 2, c.hidden = 96, c.deepstack[0] = 1;
    const int64_t g3[] = {1, 6, 9, 1, 3, 3};
    random_case(&c, g3, 2, VG_DTYPE_F32, f32_tol());
}

/* BF16 compute through the same comparison. */
static void test_random_bf16(void **state)
{
    (void)state;
    ref3_config c = {.depth = 2, .hidden = 160, .heads = 2, .inter = 150, .out_hidden = 24,
                     .patch = 4, .tpatch = 2, .merge = 2, .in_ch = 3, .num_pos = 36,
                     .num_deepstack = 2, .deepstack = {1, 0}, .act = VG_ACT_GELU_TANH, .theta = 10000};
    const int64_t grid[] = {1, 8, 10, 1, 4, 2};
    random_case(&c, grid, 2, VG_DTYPE_BF16, 3e-2);
}

/* ---- info, synthetic weights ----------------------------------------------------------------- */

/* A capture-size count outside [0, 256] is refused, at load and at reconfigure, and leaves the
 * model as it was (a negative one used to reach memcpy as a huge size). */
static void test_capture_size_count(void **state)
{
    (void)state;
    const int64_t sizes[] = {64};
    vg_vit_options o;
    vg_vit_options_init(&o);
    o.capture_sizes = sizes;
    o.num_capture_sizes = -1;
    vg_vit *v = NULL;
    VG_CHECK_FAILS(vg_vit_create_synthetic(g_dev.rt, "qwen3-vl-tiny", 1, VG_DTYPE_F32, &o, &v),
                   VG_ERR_INVALID_ARG, "at most 256 capture sizes");
    assert_null(v);
    o.num_capture_sizes = 1;
    VG_CHECK(vg_vit_create_synthetic(g_dev.rt, "qwen3-vl-tiny", 1, VG_DTYPE_F32, &o, &v));
    o.num_capture_sizes = -1;
    VG_CHECK_FAILS(vg_vit_reconfigure(v, &o), VG_ERR_INVALID_ARG, "at most 256 capture sizes");
    o.num_capture_sizes = 257;
    VG_CHECK_FAILS(vg_vit_reconfigure(v, &o), VG_ERR_INVALID_ARG, "at most 256 capture sizes");
    assert_non_null(vg_vit_runner(v)); /* the runner was kept */
    VG_CHECK(vg_vit_free(v));
}

static void test_info_and_synthetic(void **state)
{
    (void)state;
    vg_vit *v = load(TINY_DIR, VG_MODE_FULL, NULL, 0);
    vg_vit_info info;
    VG_CHECK(vg_vit_get_info(v, &info));
    assert_string_equal(info.model_type, "qwen3_vl");
    assert_int_equal(info.num_deepstack, 2);
    assert_int_equal(info.num_position_embeddings, 256);
    assert_int_equal(info.patch, 16);
    assert_int_equal(info.patch_dim, 1536);
    assert_int_equal(info.window_size, 0);
    assert_int_equal(info.head_dim, 32);
    /* linear FLOPs: patch embedding, 4 blocks of qkv, proj and a two-layer MLP, three mergers */
    double h = 128, mh = 512;
    double want = 2 * h * 1536 + 4 * 2 * (4 * h * h + 2 * h * 192) + 3 * 2 * (mh * mh + mh * 96) / 4;
    assert_true(fabs(info.flops_per_patch_linear - want) < 1e-6 * want);
    VG_CHECK(vg_vit_free(v));

    vg_vit *a = NULL, *b = NULL;
    VG_CHECK(vg_vit_create_synthetic(g_dev.rt, "qwen3-vl-tiny", 7, VG_DTYPE_F32, NULL, &a));
    VG_CHECK(vg_vit_create_synthetic(g_dev.rt, "qwen3-vl-tiny", 7, VG_DTYPE_F32, NULL, &b));
    VG_CHECK(vg_vit_get_info(a, &info));
    assert_string_equal(info.model_type, "qwen3_vl");
    assert_int_equal(info.num_deepstack, 2);
    fixture f;
    fixture_open(&f, TINY_DIR, "video");
    vg_vit_output oa = encode(a, &f), ob = encode(b, &f);
    /* the same seed gives the same weights; the outputs agree to rounding only, since each
     * model's stream tunes its GEMM plans by timing and may pick another cuBLASLt algorithm
     * (under compute-sanitizer, timings are anything) */
    for (int i = 0; i < 3; i++) {
        size_t n = (size_t)(oa.rows * oa.cols);
        assert_true(rel_err(output(&oa, i), output(&ob, i), n) <= f32_tol());
        for (size_t j = 0; j < n; j++) assert_true(isfinite(output(&oa, i)[j]));
    }
    vg_free(oa.embeddings), vg_free(ob.embeddings);
    fixture_close(&f);
    VG_CHECK(vg_vit_free(a));
    VG_CHECK(vg_vit_free(b));
    /* the benchmark's model: 0.6 B parameters, too many for a CPU (kunlun_stub, opencl on PoCL) */
    if (g_dev.gpu) {
        VG_CHECK(vg_vit_create_synthetic(g_dev.rt, "qwen3-vl-8b", 1, VG_DTYPE_BF16, NULL, &a));
        VG_CHECK(vg_vit_get_info(a, &info));
        assert_true(info.depth == 27 && info.hidden == 1152 && info.heads == 16 &&
                    info.intermediate == 4304 && info.out_hidden == 4096 &&
                    info.num_position_embeddings == 2304 && info.num_deepstack == 3);
        VG_CHECK(vg_vit_free(a));
    }
    VG_CHECK_FAILS(vg_vit_create_synthetic(g_dev.rt, "qwen3-vl-9000b", 1, VG_DTYPE_F32, NULL, &a),
                   VG_ERR_NOT_FOUND, "qwen3-vl-8b, qwen3-vl-tiny");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_config),
        cmocka_unit_test(test_pos_taps),
        cmocka_unit_test(test_reference_matches_fixtures),
        cmocka_unit_test(test_one_image),
        cmocka_unit_test(test_two_images),
        cmocka_unit_test(test_video),
        cmocka_unit_test(test_wide_image),
        cmocka_unit_test(test_odd_up_and_down),
        cmocka_unit_test(test_odd_video),
        cmocka_unit_test(test_hd128),
        cmocka_unit_test(test_bf16_compute),
        cmocka_unit_test(test_graph_equals_eager),
        cmocka_unit_test(test_same_tokens_one_graph),
        cmocka_unit_test(test_packed),
        cmocka_unit_test(test_bad_inputs),
        cmocka_unit_test(test_load_errors),
        cmocka_unit_test(test_random_shapes),
        cmocka_unit_test(test_random_merge_sizes),
        cmocka_unit_test(test_random_bf16),
        cmocka_unit_test(test_info_and_synthetic),
        cmocka_unit_test(test_capture_size_count),
    };
    return vg_model_test_main("Qwen3-VL vision encoder", "vit3", tests, &g_dev);
}
