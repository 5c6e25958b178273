/* SPDX-License-Identifier: Apache-2.0 */
/* End to end: a producer process puts the pixel tensors of the tiny Qwen2.5-VL fixtures (and
 * their grids) in its IPC pool; a consumer process imports them and runs the vision encoder
 * from device memory (vg_vit_encode_device), with no host round trip of the pixels. The
 * embeddings must match Hugging Face's, in the graph modes the encoder takes on a first and a
 * second call. Also: BF16 pixels converted on the device give what the host path gives, and a
 * NaN pixel in device memory is refused, naming its image. */
#include <math.h>
#include <sys/stat.h>

#include "ipc_util.h"
#include "test_util.h"
#include "vg/vg_half.h"
#include "vg/vg_safetensors.h"
#include "vg/vg_vit.h"

#ifndef TEST_DATA_DIR
#error "TEST_DATA_DIR must point at tests/data"
#endif
#define FIX TEST_DATA_DIR "/qwen2_5_vl_tiny"

static const char *const k_cases[] = {"one_image", "two_images", "video", "odd_image"};
enum { NCASES = 4, TWO = 1, ONE = 0 };
/* after the cases' pixels and grids: two_images in BF16, one_image and two_images with a NaN */
enum { EXTRA_BF16 = 2 * NCASES, EXTRA_NAN0, EXTRA_NAN1, NDESC };

static int open_case(const char *name, const char *kind, vg_st_file **f)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s.%s.safetensors", FIX, name, kind);
    CKV(vg_st_open(path, f));
    return 0;
}

/* Copy host bytes into a new tensor of the pool and send its descriptor. */
static int put(vg_ipc_pool *pool, vg_stream *s, int sock, vg_dtype dt, int64_t rows, int64_t cols,
               const void *host)
{
    vg_ipc_desc d;
    void *ptr = NULL;
    int64_t shape[2] = {rows, cols};
    CKV(vg_ipc_pool_alloc(pool, dt, 2, shape, &d, &ptr));
    CKV(vg_mem_copy_h2d(s, ptr, host, d.bytes));
    CKV(vg_stream_sync(s));
    CK(ipc_send_desc(sock, &d) == 0, "send");
    return 0;
}

static int produce(vg_runtime *rt, int sock, void *arg)
{
    (void)arg;
    vg_stream *s = NULL;
    CKV(vg_stream_create(rt, &s));
    vg_ipc_pool *pool = NULL;
    CKV(vg_ipc_pool_create(rt, 16u << 20, &pool));
    for (int c = 0; c < NCASES; c++) {
        vg_st_file *in = NULL;
        if (open_case(k_cases[c], "input", &in)) return 1;
        const vg_st_tensor *pv = vg_st_find(in, "pixel_values"), *g = vg_st_find(in, "grid_thw");
        CK(pv && g && pv->dtype == VG_DTYPE_F32 && g->dtype == VG_DTYPE_I64, "fixture tensors");
        if (put(pool, s, sock, VG_DTYPE_F32, pv->shape[0], pv->shape[1], pv->data)) return 1;
        if (put(pool, s, sock, VG_DTYPE_I64, g->shape[0], 3, g->data)) return 1;
        vg_st_close(in);
    }
    /* the extra cases, made on the host from the fixtures */
    for (int x = EXTRA_BF16; x < NDESC; x++) {
        vg_st_file *in = NULL;
        if (open_case(k_cases[x == EXTRA_NAN0 ? ONE : TWO], "input", &in)) return 1;
        const vg_st_tensor *pv = vg_st_find(in, "pixel_values");
        int64_t rows = pv->shape[0], cols = pv->shape[1];
        size_t n = (size_t)(rows * cols);
        float *f = malloc(n * sizeof *f);
        uint16_t *h = malloc(n * sizeof *h);
        CK(f && h, "host memory");
        memcpy(f, pv->data, n * sizeof *f);
        int rc;
        if (x == EXTRA_BF16) {
            for (size_t i = 0; i < n; i++) h[i] = vg_f32_to_bf16(f[i]);
            rc = put(pool, s, sock, VG_DTYPE_BF16, rows, cols, h);
        } else {
            /* one_image: a NaN in its only image; two_images: one in the second (row 300 of
             * 256 + 96 patches) */
            f[(x == EXTRA_NAN0 ? 5 * cols : 300 * cols) + 3] = NAN;
            rc = put(pool, s, sock, VG_DTYPE_F32, rows, cols, f);
        }
        free(f);
        free(h);
        vg_st_close(in);
        if (rc) return 1;
    }
    uint32_t done;
    CK(ipc_recv_u32(sock, &done) == 0, "consumer done");
    CKV(vg_ipc_pool_destroy(pool));
    CKV(vg_stream_destroy(s));
    return 0;
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

/* A grid tensor, imported and read back to the host (the encoder takes grids on the host). */
static int grid_of(vg_runtime *rt, vg_stream *s, const vg_ipc_desc *d, int64_t *grid, int64_t *n)
{
    vg_ipc_tensor g;
    CK(d->dtype == VG_DTYPE_I64 && d->ndim == 2 && d->shape[1] == 3 && d->shape[0] <= 8, "grid");
    CKV(vg_ipc_import(rt, d, &g));
    CKV(vg_mem_copy_d2h(s, grid, g.ptr, g.bytes));
    CKV(vg_stream_sync(s));
    CKV(vg_ipc_release(&g));
    *n = d->shape[0];
    return 0;
}

static int consume(vg_runtime *rt, int sock, void *arg)
{
    (void)arg;
    vg_ipc_desc d[NDESC];
    for (int i = 0; i < NDESC; i++) CK(ipc_recv_desc(sock, &d[i]) == 0, "receive %d", i);
    const int gpu = strcmp(vg_runtime_backend_name(rt), "kunlun_stub") != 0;
    const double tol = gpu ? 1e-3 : 1e-4;
    vg_stream *s = NULL;
    CKV(vg_stream_create(rt, &s));
    vg_vit *vit = NULL;
    CKV(vg_vit_load(rt, FIX "/model", NULL, &vit));
    vg_ipc_stats_reset();
    int64_t grid[24], n = 0;
    for (int c = 0; c < NCASES; c++) {
        vg_st_file *exp = NULL;
        if (open_case(k_cases[c], "expected", &exp)) return 1;
        const vg_st_tensor *want = vg_st_find(exp, "embeddings");
        CK(want && want->dtype == VG_DTYPE_F32, "expected embeddings");
        float *w = malloc(want->nbytes);
        CK(w, "host memory");
        memcpy(w, want->data, want->nbytes);
        if (grid_of(rt, s, &d[2 * c + 1], grid, &n)) return 1;
        vg_ipc_tensor px;
        CKV(vg_ipc_import(rt, &d[2 * c], &px));
        for (int call = 0; call < 2; call++) { /* a bucket's first call runs eagerly, then graphs */
            vg_vit_output o;
            CKV(vg_vit_encode_device(vit, px.ptr, d[2 * c].dtype, d[2 * c].shape[0],
                                     d[2 * c].shape[1], grid, n, &o));
            CK(o.rows == want->shape[0] && o.cols == want->shape[1], "%s: output shape", k_cases[c]);
            double e = rel_err(o.embeddings, w, (size_t)(o.rows * o.cols));
            printf("%s, call %d (%s): rel err %.3g\n", k_cases[c], call,
                   o.run.graph_launches ? "graph" : "eager", e);
            CK(e <= tol, "%s call %d: rel err %.3g > %.3g", k_cases[c], call, e, tol);
            vg_free(o.embeddings);
        }
        CKV(vg_ipc_release(&px));
        free(w);
        vg_st_close(exp);
    }

    /* BF16 pixels: converted on the device, the same embeddings as the host path gives */
    if (grid_of(rt, s, &d[2 * TWO + 1], grid, &n)) return 1;
    vg_ipc_tensor px;
    CKV(vg_ipc_import(rt, &d[EXTRA_BF16], &px));
    uint16_t *host = malloc(px.bytes);
    CK(host, "host memory");
    CKV(vg_mem_copy_d2h(s, host, px.ptr, px.bytes));
    CKV(vg_stream_sync(s));
    vg_vit_output od, oh;
    int64_t rows = d[EXTRA_BF16].shape[0], cols = d[EXTRA_BF16].shape[1];
    CKV(vg_vit_encode_device(vit, px.ptr, VG_DTYPE_BF16, rows, cols, grid, n, &od));
    CKV(vg_vit_encode(vit, host, VG_DTYPE_BF16, rows, cols, grid, n, &oh));
    double e = rel_err(od.embeddings, oh.embeddings, (size_t)(od.rows * od.cols));
    printf("BF16 pixels, device against host conversion: rel err %.3g\n", e);
    CK(e <= 1e-6, "BF16 device path differs from the host path: %.3g", e);
    vg_free(od.embeddings);
    vg_free(oh.embeddings);
    free(host);
    CKV(vg_ipc_release(&px));

    /* NaN pixels in device memory: refused, naming the image; nothing returned */
    for (int x = EXTRA_NAN0; x <= EXTRA_NAN1; x++) {
        if (grid_of(rt, s, &d[2 * (x == EXTRA_NAN0 ? ONE : TWO) + 1], grid, &n)) return 1;
        CKV(vg_ipc_import(rt, &d[x], &px));
        vg_vit_output o;
        vg_error_clear();
        vg_status st = vg_vit_encode_device(vit, px.ptr, VG_DTYPE_F32, d[x].shape[0],
                                            d[x].shape[1], grid, n, &o);
        const char *image = x == EXTRA_NAN0 ? "image 0" : "image 1";
        CK(st == VG_ERR_INVALID_ARG && strstr(vg_last_error(), image) &&
           strstr(vg_last_error(), "not finite") && !o.embeddings,
           "NaN in %s: %s: %s", image, vg_status_name(st), vg_last_error());
        CKV(vg_ipc_release(&px));
    }
    /* bad arguments are refused as the host path refuses them */
    vg_vit_output o;
    CK(vg_vit_encode_device(vit, NULL, VG_DTYPE_F32, 4, cols, grid, n, &o) == VG_ERR_INVALID_ARG,
       "NULL pixels");
    CK(vg_vit_encode_device(NULL, px.ptr, VG_DTYPE_F32, 4, cols, grid, n, &o) == VG_ERR_INVALID_ARG,
       "NULL vit");
    CK(vg_vit_encode_device(vit, (void *)64, VG_DTYPE_I32, rows, cols, grid, n, &o) ==
       VG_ERR_INVALID_ARG, "I32 pixels");
    CK(vg_vit_encode_device(vit, (void *)64, VG_DTYPE_F32, rows + 1, cols, grid, n, &o) ==
       VG_ERR_INVALID_ARG, "rows that disagree with the grid");

    vg_ipc_stats st = {.struct_size = sizeof st};
    vg_ipc_stats_get(&st);
    printf("consumer: %llu imports, %llu open(s)\n", (unsigned long long)st.imports,
           (unsigned long long)st.opens);
    CK(st.opens == 1, "one pool, one open: %llu", (unsigned long long)st.opens);
    CKV(vg_vit_free(vit));
    CKV(vg_stream_destroy(s));
    CK(ipc_send_u32(sock, 0) == 0, "done");
    return 0;
}

int main(void)
{
    const char *req = getenv("VG_REQUIRE_DEVICE");
    char backend[64];
    int ready = ipc_device_ready(backend);
    if (ready == VG_TEST_SKIP && !(req && strcmp(req, "1") == 0)) {
        const char *asked = getenv("VG_BACKEND");
        printf("SKIP: no device with IPC (VG_BACKEND=%s%s)\n", asked ? asked : "",
               backend[0] ? ", it opened but offers no IPC" : "");
        return VG_TEST_SKIP;
    }
    if (ready != 0) return 1;
    int rc = ipc_pair(produce, consume, NULL, NULL, NULL);
    printf("ipc vit: %s\n", rc == 0 ? "passed" : "FAILED");
    return rc;
}
