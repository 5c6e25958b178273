/* SPDX-License-Identifier: Apache-2.0 */
/* The Qwen2.5-VL vision encoder against Hugging Face's golden outputs, on the backend VG_BACKEND
 * names (kunlun_stub in CI, cuda on the GPU machine), in every graph mode, with padding. */
#include <math.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "test_util.h"
#include "vg/vg_safetensors.h"
#include "vg/vg_vit.h"

#ifndef TEST_DATA_DIR
#error "TEST_DATA_DIR must point at tests/data"
#endif
#define F32_DIR TEST_DATA_DIR "/qwen2_5_vl_tiny"
#define BF16_DIR TEST_DATA_DIR "/qwen2_5_vl_tiny_bf16_sharded"

static vg_model_test_device g_dev; /* the runtime; gpu: tolerances 1e-4 for F32 on kunlun_stub and
                                    * opencl, 1e-3 on cuda and hip; graphs: else every mode is eager */

/* ---- fixture files ------------------------------------------------------------------------- */

typedef struct fixture {
    vg_st_file *in, *expected;
    float *pixels; /* F32 copy of pixel_values, or NULL when BF16 */
    uint16_t *pixels16;
    vg_dtype pdt;
    int64_t rows, cols, grid[3 * 8], n;
    const float *want; /* expected embeddings (copied: the mapping may be unaligned) */
    float *want_copy;
    int64_t want_rows, want_cols;
} fixture;

static void fixture_open(fixture *f, const char *dir, const char *name)
{
    char path[1024];
    memset(f, 0, sizeof *f);
    snprintf(path, sizeof path, "%s/%s.input.safetensors", dir, name);
    VG_CHECK(vg_st_open(path, &f->in));
    snprintf(path, sizeof path, "%s/%s.expected.safetensors", dir, name);
    VG_CHECK(vg_st_open(path, &f->expected));
    const vg_st_tensor *pv = vg_st_find(f->in, "pixel_values"), *g = vg_st_find(f->in, "grid_thw");
    const vg_st_tensor *e = vg_st_find(f->expected, "embeddings");
    assert_non_null(pv);
    assert_non_null(g);
    assert_non_null(e);
    f->rows = pv->shape[0], f->cols = pv->shape[1], f->pdt = pv->dtype, f->n = g->shape[0];
    assert_true(f->n <= 8);
    memcpy(f->grid, g->data, (size_t)f->n * 3 * sizeof(int64_t));
    void *copy = malloc(pv->nbytes);
    assert_non_null(copy);
    memcpy(copy, pv->data, pv->nbytes);
    if (pv->dtype == VG_DTYPE_F32) f->pixels = copy;
    else f->pixels16 = copy;
    f->want_copy = malloc(e->nbytes);
    assert_non_null(f->want_copy);
    memcpy(f->want_copy, e->data, e->nbytes);
    f->want = f->want_copy;
    f->want_rows = e->shape[0], f->want_cols = e->shape[1];
}

static void fixture_close(fixture *f)
{
    free(f->pixels);
    free(f->pixels16);
    free(f->want_copy);
    vg_st_close(f->in);
    vg_st_close(f->expected);
}

static const void *fixture_pixels(const fixture *f)
{
    return f->pixels ? (const void *)f->pixels : (const void *)f->pixels16;
}

static double rel_err(const float *got, const float *want, size_t n)
{
    double err = 0, ref = 1e-30;
    for (size_t i = 0; i < n; i++) {
        if (isnan(got[i])) return INFINITY;
        err = fmax(err, fabs((double)got[i] - want[i]));
        ref = fmax(ref, fabs((double)want[i]));
    }
    return err / ref;
}

/* Load the model of a fixture folder (DIR/model), or a model directory itself. */
static vg_vit *load(const char *dir, vg_graph_mode mode, const int64_t *sizes, int nsizes)
{
    char path[1024];
    struct stat sb;
    snprintf(path, sizeof path, "%s/model", dir);
    if (stat(path, &sb) != 0) snprintf(path, sizeof path, "%s", dir);
    vg_vit_options o;
    vg_vit_options_init(&o);
    o.mode = mode;
    o.capture_sizes = sizes;
    o.num_capture_sizes = nsizes;
    vg_vit *v = NULL;
    VG_CHECK(vg_vit_load(g_dev.rt, path, &o, &v));
    return v;
}

static vg_vit_output encode(vg_vit *v, const fixture *f)
{
    vg_vit_output o;
    VG_CHECK(vg_vit_encode(v, fixture_pixels(f), f->pdt, f->rows, f->cols, f->grid, f->n, &o));
    assert_int_equal(o.rows, f->want_rows);
    assert_int_equal(o.cols, f->want_cols);
    return o;
}

/* capture sizes that never equal a fixture's token count, so graphs always pad */
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
                double e = rel_err(o.embeddings, f.want, (size_t)(o.rows * o.cols));
                if (e > tol)
                    print_message("%s/%s mode %s sizes %d call %d: rel err %.3g > %.3g\n", dir, name,
                                  vg_graph_mode_name(k_modes[k]), set, call, e, tol);
                assert_true(e <= tol);
                if (k_modes[k] != VG_MODE_NONE && !g_dev.graphs) { /* downgraded to eager, logged */
                    assert_true(o.run.captures == 0 && o.run.graph_launches == 0);
                } else if (k_modes[k] != VG_MODE_NONE) {
                    /* the encoder runs a bucket's first call eagerly (tuning), then captures */
                    assert_true(o.run.padded_tokens > f.rows || set == 1);
                    assert_true(call == 0 ? o.run.captures > 0 : o.run.captures == 0);
                    assert_true(call == 0 || o.run.graph_launches > 0);
                }
                vg_free(o.embeddings);
            }
            VG_CHECK(vg_vit_free(v));
        }
    }
    fixture_close(&f);
}

static double f32_tol(void) { return g_dev.gpu ? 1e-3 : 1e-4; }

static void test_one_image(void **s) { (void)s; check_case(F32_DIR, "one_image", f32_tol()); }
static void test_two_images(void **s) { (void)s; check_case(F32_DIR, "two_images", f32_tol()); }
static void test_video(void **s) { (void)s; check_case(F32_DIR, "video", f32_tol()); }
static void test_odd_image(void **s) { (void)s; check_case(F32_DIR, "odd_image", f32_tol()); }
static void test_bf16_sharded(void **s) { (void)s; check_case(BF16_DIR, "two_images", 3e-2); }

static void test_graph_equals_eager(void **state)
{
    (void)state;
    fixture f;
    fixture_open(&f, F32_DIR, "two_images");
    vg_vit *eager = load(F32_DIR, VG_MODE_NONE, NULL, 0);
    vg_vit_output e = encode(eager, &f);
    for (int k = 1; k < 4; k++) {
        vg_vit *g = load(F32_DIR, k_modes[k], k_padding_sizes, 4);
        for (int call = 0; call < 2; call++) {
            vg_vit_output o = encode(g, &f);
            double d = rel_err(o.embeddings, e.embeddings, (size_t)(o.rows * o.cols));
            if (d > 1e-6) print_message("mode %s: graph vs eager %.3g\n", vg_graph_mode_name(k_modes[k]), d);
            assert_true(d <= 1e-6);
            vg_free(o.embeddings);
        }
        VG_CHECK(vg_vit_free(g));
    }
    vg_free(e.embeddings);
    VG_CHECK(vg_vit_free(eager));
    fixture_close(&f);
}

/* One graph, two calls with the same token count and different image splits: the second must
 * see its own segmentation (a runner that baked cu_seqlens at capture would replay the first). */
static void test_segmentation_is_not_baked(void **state)
{
    (void)state;
    fixture f;
    fixture_open(&f, F32_DIR, "one_image"); /* (1, 16, 16): 256 patches */
    static const int64_t one[3] = {1, 16, 16}, split[6] = {1, 8, 16, 1, 8, 16};
    const int64_t sizes[] = {264};
    for (int k = 1; k < 4; k++) {
        vg_vit *g = load(F32_DIR, k_modes[k], sizes, 1), *eager = load(F32_DIR, VG_MODE_NONE, NULL, 0);
        vg_vit_output a, b, ref;
        VG_CHECK(vg_vit_encode(g, f.pixels, VG_DTYPE_F32, 256, f.cols, one, 1, &a));
        VG_CHECK(vg_vit_encode(g, f.pixels, VG_DTYPE_F32, 256, f.cols, split, 2, &b));
        assert_int_equal(b.run.captures, 0); /* replayed the graph captured for the first call */
        assert_true(g_dev.graphs ? b.run.graph_launches > 0 : b.run.graph_launches == 0);
        VG_CHECK(vg_vit_encode(eager, f.pixels, VG_DTYPE_F32, 256, f.cols, split, 2, &ref));
        size_t n = (size_t)(b.rows * b.cols);
        assert_true(rel_err(b.embeddings, ref.embeddings, n) <= 1e-6);
        assert_true(rel_err(a.embeddings, ref.embeddings, n) > 1e-3); /* the split matters */
        assert_true(rel_err(a.embeddings, f.want, n) <= f32_tol());
        vg_free(a.embeddings), vg_free(b.embeddings), vg_free(ref.embeddings);
        VG_CHECK(vg_vit_free(g));
        VG_CHECK(vg_vit_free(eager));
    }
    fixture_close(&f);
}

/* A video and two images packed into one call give each one's own embeddings, in order. */
static void test_images_and_video_packed(void **state)
{
    (void)state;
    fixture parts[3];
    fixture_open(&parts[0], F32_DIR, "video");
    fixture_open(&parts[1], F32_DIR, "one_image");
    fixture_open(&parts[2], F32_DIR, "odd_image");
    int64_t rows = 0, out_rows = 0, grid[9], cols = parts[0].cols;
    for (int i = 0; i < 3; i++) rows += parts[i].rows, out_rows += parts[i].want_rows;
    float *pixels = malloc((size_t)(rows * cols) * 4), *want = malloc((size_t)(out_rows * 96) * 4);
    assert_true(pixels && want);
    int64_t r = 0, o = 0;
    for (int i = 0; i < 3; i++) {
        memcpy(pixels + r * cols, parts[i].pixels, (size_t)(parts[i].rows * cols) * 4);
        memcpy(want + o * 96, parts[i].want, (size_t)(parts[i].want_rows * 96) * 4);
        memcpy(grid + 3 * i, parts[i].grid, 3 * sizeof(int64_t));
        r += parts[i].rows, o += parts[i].want_rows;
    }
    vg_vit *v = load(F32_DIR, VG_MODE_FULL, NULL, 0);
    vg_vit_output out;
    VG_CHECK(vg_vit_encode(v, pixels, VG_DTYPE_F32, rows, cols, grid, 3, &out));
    assert_int_equal(out.rows, out_rows);
    assert_true(rel_err(out.embeddings, want, (size_t)(out_rows * 96)) <= f32_tol());
    vg_free(out.embeddings);
    VG_CHECK(vg_vit_free(v));
    free(pixels), free(want);
    for (int i = 0; i < 3; i++) fixture_close(&parts[i]);
}

static void test_bad_inputs(void **state)
{
    (void)state;
    fixture f;
    fixture_open(&f, F32_DIR, "one_image");
    vg_vit *v = load(F32_DIR, VG_MODE_FULL, NULL, 0);
    vg_vit_output o;
    const int64_t good[3] = {1, 16, 16}, odd_h[3] = {1, 15, 16}, zero_t[3] = {0, 16, 16};
    VG_CHECK_FAILS(vg_vit_encode(v, f.pixels, VG_DTYPE_F32, 250, f.cols, good, 1, &o),
                   VG_ERR_INVALID_ARG, "pixel_values has 250 rows, but grid_thw describes");
    VG_CHECK_FAILS(vg_vit_encode(v, f.pixels, VG_DTYPE_F32, 240, f.cols, odd_h, 1, &o),
                   VG_ERR_INVALID_ARG, "must be multiples of spatial_merge_size 2");
    VG_CHECK_FAILS(vg_vit_encode(v, f.pixels, VG_DTYPE_F32, 256, f.cols - 1, good, 1, &o),
                   VG_ERR_INVALID_ARG, "pixel_values has 1175 columns");
    VG_CHECK_FAILS(vg_vit_encode(v, f.pixels, VG_DTYPE_F32, 0, f.cols, good, 1, &o),
                   VG_ERR_INVALID_ARG, "empty");
    VG_CHECK_FAILS(vg_vit_encode(v, f.pixels, VG_DTYPE_F32, 256, f.cols, NULL, 1, &o),
                   VG_ERR_INVALID_ARG, "grid_thw");
    VG_CHECK_FAILS(vg_vit_encode(v, f.pixels, VG_DTYPE_F32, 256, f.cols, good, 0, &o),
                   VG_ERR_INVALID_ARG, "grid_thw");
    VG_CHECK_FAILS(vg_vit_encode(v, f.pixels, VG_DTYPE_F32, 256, f.cols, zero_t, 1, &o),
                   VG_ERR_INVALID_ARG, "each of t, h, w");
    VG_CHECK_FAILS(vg_vit_encode(v, f.pixels, VG_DTYPE_I32, 256, f.cols, good, 1, &o),
                   VG_ERR_INVALID_ARG, "F32, BF16 or F16");
    /* non-finite pixels are refused, naming the first bad row and column */
    float *bad = malloc((size_t)(f.rows * f.cols) * sizeof(float));
    assert_non_null(bad);
    memcpy(bad, f.pixels, (size_t)(f.rows * f.cols) * sizeof(float));
    bad[12 * f.cols + 5] = NAN;
    VG_CHECK_FAILS(vg_vit_encode(v, bad, VG_DTYPE_F32, f.rows, f.cols, f.grid, f.n, &o),
                   VG_ERR_INVALID_ARG, "row 12, column 5 is NaN");
    bad[12 * f.cols + 5] = f.pixels[12 * f.cols + 5];
    bad[(f.rows - 1) * f.cols] = -INFINITY;
    VG_CHECK_FAILS(vg_vit_encode(v, bad, VG_DTYPE_F32, f.rows, f.cols, f.grid, f.n, &o),
                   VG_ERR_INVALID_ARG, "infinity");
    free(bad);
    /* and the encoder still works afterwards */
    o = encode(v, &f);
    assert_true(rel_err(o.embeddings, f.want, (size_t)(o.rows * o.cols)) <= f32_tol());
    vg_free(o.embeddings);
    VG_CHECK(vg_vit_free(v));
    fixture_close(&f);
}

/* ---- checkpoints that are wrong in one way each ---------------------------------------------- */

static char g_tmp[256];

static void make_model_dir(const char *config_json, int link_weights)
{
    snprintf(g_tmp, sizeof g_tmp, "/tmp/vg_test_vit_XXXXXX");
    assert_non_null(mkdtemp(g_tmp));
    char path[512];
    snprintf(path, sizeof path, "%s/config.json", g_tmp);
    FILE *fp = fopen(path, "w");
    assert_non_null(fp);
    fputs(config_json, fp);
    fclose(fp);
    if (link_weights) {
        snprintf(path, sizeof path, "%s/model.safetensors", g_tmp);
        assert_int_equal(symlink(F32_DIR "/model/model.safetensors", path), 0);
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

static const char *config_with(const char *key, const char *value)
{
    static char buf[2048];
    snprintf(buf, sizeof buf,
             "{\"model_type\": \"qwen2_5_vl\", \"vision_config\": {\"depth\": %s, \"hidden_size\": 128, "
             "\"intermediate_size\": %s, \"num_heads\": 4, \"out_hidden_size\": 96, "
             "\"fullatt_block_indexes\": [1, 3], \"window_size\": %s, \"hidden_act\": \"silu\"}}",
             !strcmp(key, "depth") ? value : "4", !strcmp(key, "inter") ? value : "200",
             !strcmp(key, "window") ? value : "112");
    return buf;
}

static void expect_load_failure(const char *dir, vg_status want, const char *needle)
{
    vg_vit *v = (vg_vit *)0x1;
    VG_CHECK_FAILS(vg_vit_load(g_dev.rt, dir, NULL, &v), want, needle);
    assert_null(v);
}

static void test_load_errors(void **state)
{
    (void)state;
    expect_load_failure("/nonexistent/model", VG_ERR_NOT_FOUND, "/nonexistent/model: does not exist");
    make_model_dir("{not json", 1);
    expect_load_failure(g_tmp, VG_ERR_FORMAT, "config.json: not valid JSON (truncated or malformed)");
    remove_model_dir();
    make_model_dir("{\"model_type\": \"qwen2_5_vl\"}", 1);
    expect_load_failure(g_tmp, VG_ERR_FORMAT, "no 'vision_config' object");
    remove_model_dir();
    make_model_dir("{\"model_type\": \"llama\", \"vision_config\": {}}", 1);
    expect_load_failure(g_tmp, VG_ERR_UNSUPPORTED, "model_type 'llama' is not supported");
    remove_model_dir();
    make_model_dir(config_with("inter", "100"), 1);
    expect_load_failure(g_tmp, VG_ERR_FORMAT,
                        "model.safetensors: tensor 'visual.blocks.0.mlp.gate_proj.weight' has shape "
                        "[200, 128], the model expects [100, 128]");
    remove_model_dir();
    make_model_dir(config_with("depth", "5"), 1);
    expect_load_failure(g_tmp, VG_ERR_NOT_FOUND, "tensor 'visual.blocks.4.norm1.weight' is missing");
    remove_model_dir();
    make_model_dir(config_with("window", "100"), 1);
    expect_load_failure(g_tmp, VG_ERR_FORMAT, "window_size 100 is not a multiple");
    remove_model_dir();
    make_model_dir(config_with("depth", "4"), 0); /* no weights at all */
    expect_load_failure(g_tmp, VG_ERR_NOT_FOUND, "model.safetensors: cannot open");
    remove_model_dir();
    vg_vit_options o;
    vg_vit_options_init(&o);
    const int64_t bad[] = {64, 130};
    o.capture_sizes = bad;
    o.num_capture_sizes = 2;
    vg_vit *v = NULL;
    VG_CHECK_FAILS(vg_vit_load(g_dev.rt, F32_DIR "/model", &o, &v), VG_ERR_INVALID_ARG,
                   "capture size 130 is not a multiple of spatial_merge_size^2 = 4");
}

/* Newer exports name the tower model.visual.*: same weights, other names. */
static void test_model_visual_prefix(void **state)
{
    (void)state;
    vg_st_file *src = NULL;
    VG_CHECK(vg_st_open(F32_DIR "/model/model.safetensors", &src));
    int n = vg_st_count(src);
    vg_st_write_tensor *t = calloc((size_t)n, sizeof *t);
    char **names = calloc((size_t)n, sizeof *names);
    void **data = calloc((size_t)n, sizeof *data);
    assert_true(t && names && data);
    for (int i = 0; i < n; i++) {
        const vg_st_tensor *x = vg_st_at(src, i);
        names[i] = malloc(strlen(x->name) + 8);
        assert_non_null(names[i]);
        sprintf(names[i], "%s%s", strncmp(x->name, "visual.", 7) == 0 ? "model." : "", x->name);
        data[i] = malloc(x->nbytes);
        memcpy(data[i], x->data, x->nbytes);
        t[i] = (vg_st_write_tensor){names[i], x->dtype, x->ndim, x->shape, data[i]};
    }
    make_model_dir(config_with("depth", "4"), 0);
    char path[512];
    snprintf(path, sizeof path, "%s/model.safetensors", g_tmp);
    VG_CHECK(vg_st_write(path, t, n));
    fixture f;
    fixture_open(&f, F32_DIR, "one_image");
    vg_vit *v = load(g_tmp, VG_MODE_FULL, NULL, 0);
    vg_vit_output o = encode(v, &f);
    assert_true(rel_err(o.embeddings, f.want, (size_t)(o.rows * o.cols)) <= f32_tol());
    vg_free(o.embeddings);
    VG_CHECK(vg_vit_free(v));
    fixture_close(&f);
    remove_model_dir();
    for (int i = 0; i < n; i++) free(names[i]), free(data[i]);
    free(t), free(names), free(data);
    vg_st_close(src);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_one_image),
        cmocka_unit_test(test_two_images),
        cmocka_unit_test(test_video),
        cmocka_unit_test(test_odd_image),
        cmocka_unit_test(test_bf16_sharded),
        cmocka_unit_test(test_graph_equals_eager),
        cmocka_unit_test(test_segmentation_is_not_baked),
        cmocka_unit_test(test_images_and_video_packed),
        cmocka_unit_test(test_bad_inputs),
        cmocka_unit_test(test_load_errors),
        cmocka_unit_test(test_model_visual_prefix),
    };
    return vg_model_test_main("vision encoder", "vit", tests, &g_dev);
}
