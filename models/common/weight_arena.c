/* SPDX-License-Identifier: Apache-2.0 */
/* The weight arena: plan, allocate once, upload with dtype conversion and padding. */
#include "weight_arena.h"

#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"
#include "vg/vg_half.h"

#define ARENA_ALIGN ((size_t)256)
#ifndef STAGE_CHUNK /* (a test may make it small) */
#define STAGE_CHUNK ((size_t)64 << 20) /* host staging: at most this, or one row if larger */
#endif

struct vg_arena {
    vg_runtime *rt;
    const vg_ckpt *ck; /* NULL: synthetic values */
    uint64_t seed;
    vg_dtype dt;
    size_t es;
    const char *what;
    const char *prefix0;
    char prefix[512];
    int placing;        /* 0: the plan pass, 1: the place pass */
    size_t offset;      /* next free byte of the arena (plan pass: the running total) */
    int count;          /* tensors described so far in this pass */
    size_t planned;     /* the plan pass's total bytes and tensor count */
    int planned_count;
    size_t stage_bytes; /* the largest chunk any tensor stages */
    char *base;         /* place pass: the device allocation, the host staging, the stream */
    void *stage;
    vg_stream *s;
    /* plan pass: the checkpoint tensors described or skipped, for the unaccounted check */
    const vg_st_tensor **used;
    size_t nused, capused;
};

static int mul_size(size_t a, size_t b, size_t *out) { return !__builtin_mul_overflow(a, b, out); }

/* Rows staged at a time: about STAGE_CHUNK bytes, at least one row. */
static int64_t chunk_rows(size_t row_bytes)
{
    return row_bytes >= STAGE_CHUNK ? 1 : (int64_t)(STAGE_CHUNK / row_bytes);
}

static uint64_t splitmix64(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

static uint64_t name_hash(const char *name) /* FNV-1a */
{
    uint64_t h = 1469598103934665603ull;
    for (const char *p = name; *p; p++) h = (h ^ (unsigned char)*p) * 1099511628211ull;
    return h;
}

/* Synthetic values for rows [row0, row0 + nrows), columns [col0, col0 + ncols) of a [rows,
 * cols] tensor whose name hashes to h: uniform with standard deviation 0.02, as a randomly
 * initialised model would have. Element i of the tensor (row-major) depends on (seed, name, i)
 * alone, so any chunking or slicing gives the same values. */
static void synthesize_block(uint64_t h, uint64_t seed, int64_t row0, int64_t nrows, int64_t col0,
                             int64_t ncols, int64_t cols, vg_dtype dt, void *dst, int64_t ld)
{
    const float a = 0.02f * 1.7320508f;
    size_t es = vg_dtype_size(dt);
    for (int64_t r = 0; r < nrows; r++) {
        char *row = (char *)dst + (size_t)(r * ld) * es;
        uint64_t i = (uint64_t)((row0 + r) * cols + col0);
        for (int64_t c = 0; c < ncols; c++, i++) {
            float v = ((float)(splitmix64(seed ^ h ^ (i * 0x9e3779b97f4a7c15ull)) >> 40) *
                           (1.0f / 16777216.0f) * 2.0f -
                       1.0f) *
                      a;
            if (dt == VG_DTYPE_F32) ((float *)row)[c] = v;
            else ((uint16_t *)row)[c] = dt == VG_DTYPE_BF16 ? vg_f32_to_bf16(v) : vg_f32_to_f16(v);
        }
    }
}

/* Remember checkpoint tensor t (when there is one) as accounted for. */
static vg_status mark_used(vg_arena *a, const vg_st_tensor *t)
{
    if (!t) return VG_OK;
    if (a->nused == a->capused) {
        size_t cap = a->capused ? 2 * a->capused : 256;
        const vg_st_tensor **p = realloc(a->used, cap * sizeof *p);
        if (!p) return vg_error_set(VG_ERR_OUT_OF_MEMORY, "%s: out of memory", a->what);
        a->used = p;
        a->capused = cap;
    }
    a->used[a->nused++] = t;
    return VG_OK;
}

static int by_address(const void *x, const void *y)
{
    uintptr_t p = (uintptr_t)*(const vg_st_tensor *const *)x, q = (uintptr_t)*(const vg_st_tensor *const *)y;
    return (p > q) - (p < q);
}

/* After the plan pass: every checkpoint tensor named `owns`... was described or skipped. The
 * message names the first few (with their file) and the count. */
static vg_status check_unaccounted(vg_arena *a, const char *owns)
{
    qsort(a->used, a->nused, sizeof *a->used, by_address);
    enum { SHOWN = 4 };
    const vg_st_tensor *shown[SHOWN];
    const vg_st_file *shown_file[SHOWN];
    size_t n = 0, plen = strlen(owns);
    for (int i = 0; i < vg_ckpt_file_count(a->ck); i++) {
        const vg_st_file *f = vg_ckpt_file(a->ck, i);
        for (int k = 0; k < vg_st_count(f); k++) {
            const vg_st_tensor *t = vg_st_at(f, k);
            if (strncmp(t->name, owns, plen) != 0 ||
                (a->nused && bsearch(&t, a->used, a->nused, sizeof *a->used, by_address)))
                continue;
            if (n < SHOWN) shown[n] = t, shown_file[n] = f;
            n++;
        }
    }
    if (!n) return VG_OK;
    char list[2048];
    size_t len = 0;
    for (size_t i = 0; i < n && i < SHOWN && len < sizeof list; i++) {
        const char *p = vg_st_path(shown_file[i]), *slash = strrchr(p, '/');
        len += (size_t)snprintf(list + len, sizeof list - len, "%s'%s' (%s)", i ? ", " : "",
                                shown[i]->name, slash ? slash + 1 : p);
    }
    if (n > SHOWN && len < sizeof list)
        snprintf(list + len, sizeof list - len, " and %zu more", n - SHOWN);
    return vg_error_set(VG_ERR_FORMAT, "%s: %zu tensor%s of the checkpoint %s not accounted for by "
                                       "config.json: %s (config.json and the weights disagree, "
                                       "e.g. on the number of layers)",
                        a->what, n, n == 1 ? "" : "s", n == 1 ? "is" : "are", list);
}

static vg_status bad_spec(const vg_arena *a, const vg_arena_spec *t, const char *why)
{
    return vg_error_set(VG_ERR_INTERNAL, "%s: weight '%s%s': %s", a->what, a->prefix,
                        t && t->names && t->names[0] ? t->names[0] : "?", why);
}

/* Where one part's values come from: checkpoint rows [row0, row0 + rows) of `shape`, columns
 * [col0, col0 + ncols) of its cols; with scale (the spec's col_scale, `cols` floats, named
 * scale_name), each column multiplied by its element. */
typedef struct part_src {
    const char *name;
    int ndim;
    const int64_t *shape;
    int64_t row0, rows, col0, ncols, cols;
    const float *scale;
    const char *scale_name;
} part_src;

/* Rows [row0, row0 + n) of part p into the staging buffer as `dt` (row stride ld). */
static vg_status stage_rows(vg_arena *a, const part_src *p, int64_t row0, int64_t n, vg_dtype dt, int64_t ld)
{
    if (a->ck)
        return vg_ckpt_read_block(a->ck, p->name, p->ndim, p->shape, p->row0 + row0, n, p->col0, p->ncols,
                                  dt, a->stage, ld);
    synthesize_block(name_hash(p->name), a->seed, p->row0 + row0, n, p->col0, p->ncols, p->cols, dt,
                     a->stage, ld);
    return VG_OK;
}

/* The staged F32 rows [0, real) times the part's column scale, then all n rows (the zero
 * padding's too) converted in place to the arena's dtype (front to back: an element's narrower
 * destination never passes its source). */
static vg_status scale_stage(vg_arena *a, const part_src *p, int64_t row0, int64_t real, int64_t n, int64_t ld)
{
    float *f = a->stage;
    /* the largest finite value of the arena's dtype */
    const float most = a->dt == VG_DTYPE_F16 ? 65504.0f : a->dt == VG_DTYPE_BF16 ? 3.3895314e38f : FLT_MAX;
    for (int64_t r = 0; r < real; r++)
        for (int64_t j = 0; j < p->ncols; j++) {
            float v = f[r * ld + j] * p->scale[p->col0 + j];
            if (!(fabsf(v) <= most)) /* NaN too */
                return vg_error_set(VG_ERR_FORMAT, "%s: '%s' [%lld, %lld] times '%s' [%lld] is %g, not "
                                                   "finite in %s (the norm's weight cannot be folded "
                                                   "into the projection)",
                                    a->what, p->name, (long long)(p->row0 + row0 + r),
                                    (long long)(p->col0 + j), p->scale_name, (long long)(p->col0 + j),
                                    (double)v, vg_dtype_name(a->dt));
            f[r * ld + j] = v;
        }
    if (a->dt == VG_DTYPE_F32) return VG_OK;
    uint16_t *h = a->stage;
    for (int64_t i = 0; i < n * ld; i++)
        h[i] = a->dt == VG_DTYPE_BF16 ? vg_f32_to_bf16(f[i]) : vg_f32_to_f16(f[i]);
    return VG_OK;
}

/* Upload part rows [0, rp) of one part: rows below p->rows from the source, the rest zero. With a
 * column scale the rows are staged as F32 first (the plan pass sized the staging for that). */
static vg_status place_part(vg_arena *a, const part_src *p, int64_t rp, int64_t ld, char *dev)
{
    size_t row_bytes = (size_t)ld * a->es, stage_row = (size_t)ld * (p->scale ? sizeof(float) : a->es);
    int64_t chunk = chunk_rows(stage_row);
    for (int64_t r0 = 0; r0 < rp; r0 += chunk) {
        int64_t n = rp - r0 < chunk ? rp - r0 : chunk;
        int64_t real = p->rows - r0 < 0 ? 0 : p->rows - r0 < n ? p->rows - r0 : n;
        size_t bytes = (size_t)n * row_bytes;
        char *dst = dev + (size_t)r0 * row_bytes;
        if (real == 0) { /* padding rows only */
            VGM_TRY(vg_mem_set(a->s, dst, 0, bytes));
            continue;
        }
        if (ld > p->ncols || real < n) memset(a->stage, 0, (size_t)n * stage_row);
        VGM_TRY(stage_rows(a, p, r0, real, p->scale ? VG_DTYPE_F32 : a->dt, ld));
        if (p->scale) VGM_TRY(scale_stage(a, p, r0, real, n, ld));
        VGM_TRY(vg_mem_copy_h2d(a->s, dst, a->stage, bytes));
        VGM_TRY(vg_stream_sync(a->s)); /* the staging buffer is reused */
    }
    return VG_OK;
}

/* The spec's column scale (prefix + name, `cols` elements) as floats in *out (malloc'd). */
static vg_status load_scale(vg_arena *a, const char *name, int64_t cols, float **out)
{
    *out = malloc((size_t)cols * sizeof **out);
    if (!*out) return vg_error_set(VG_ERR_OUT_OF_MEMORY, "%s: out of memory", a->what);
    vg_status st = VG_OK;
    if (a->ck) st = vg_ckpt_read(a->ck, name, 1, VGM_SHAPE(cols), VG_DTYPE_F32, *out);
    else synthesize_block(name_hash(name), a->seed, 0, cols, 0, 1, 1, VG_DTYPE_F32, *out, 1);
    if (st != VG_OK) {
        free(*out);
        *out = NULL;
    }
    return st;
}

vg_status vg_arena_add(vg_arena *a, const vg_arena_spec *t)
{
    if (!a) return vg_error_set(VG_ERR_INVALID_ARG, "vg_arena_add: NULL arena");
    if (!t || !t->slot || !t->names || !t->shape) return bad_spec(a, t, "incomplete description");
    int np = t->nparts ? t->nparts : 1;
    if (np < 0 || t->ndim < 1 || t->ndim > VG_ST_MAX_DIMS || t->rows_pad < 0 || t->cols_pad < 0)
        return bad_spec(a, t, "bad part count, rank or padding");
    int64_t cols = 1;
    for (int d = 1; d < t->ndim; d++)
        if (t->shape[d] < 1 || __builtin_mul_overflow(cols, t->shape[d], &cols))
            return bad_spec(a, t, "bad shape");
    int64_t ncols = t->col_take > 0 ? t->col_take : cols;
    if (t->col_take < 0 || (t->col_take > 0 && (t->col0 < 0 || t->col0 > cols - t->col_take)) ||
        (t->part_row0 && !t->part_take))
        return bad_spec(a, t, "bad slice");
    int64_t ld = ncols > t->cols_pad ? ncols : t->cols_pad;
    size_t row_bytes, bytes = 0;
    if (!mul_size((size_t)ld, a->es, &row_bytes)) return bad_spec(a, t, "size overflows");
    for (int p = 0; p < np; p++) {
        int64_t rows = t->part_rows ? t->part_rows[p] : t->shape[0];
        int64_t take = t->part_row0 ? t->part_take[p] : rows;
        int64_t rp = take > t->rows_pad ? take : t->rows_pad;
        size_t part;
        if (rows < 1 || (t->part_row0 && (t->part_row0[p] < 0 || take < 0 || t->part_row0[p] > rows - take)))
            return bad_spec(a, t, rows < 1 ? "bad shape" : "bad slice");
        if (rp < 1 || !mul_size((size_t)rp, row_bytes, &part) ||
            __builtin_add_overflow(bytes, part, &bytes))
            return bad_spec(a, t, rp < 1 ? "empty slice" : "size overflows");
    }
    size_t at = a->offset, end;
    if (__builtin_add_overflow(at, bytes, &end) || end > SIZE_MAX - ARENA_ALIGN)
        return bad_spec(a, t, "size overflows");
    if (a->placing && (a->count >= a->planned_count || end > a->planned))
        return bad_spec(a, t, "the model described different tensors in its two passes");
    char name[1024], scale_name[1024];
    float *scale = NULL;
    size_t stage_row = row_bytes; /* a row as staged: F32 with a column scale */
    if (t->col_scale && !mul_size((size_t)ld, sizeof(float), &stage_row)) return bad_spec(a, t, "size overflows");
    if (t->col_scale) {
        if ((size_t)snprintf(scale_name, sizeof scale_name, "%s%s", a->prefix, t->col_scale) >= sizeof scale_name)
            return vg_error_set(VG_ERR_INVALID_ARG, "%s: tensor name '%s%s' is too long", a->what,
                                a->prefix, t->col_scale);
        if (!a->placing && a->ck) {
            VGM_TRY(vg_ckpt_check(a->ck, scale_name, 1, VGM_SHAPE(cols)));
            VGM_TRY(mark_used(a, vg_ckpt_find(a->ck, scale_name, NULL)));
        }
        if (a->placing) VGM_TRY(load_scale(a, scale_name, cols, &scale));
    }
    vg_status st = VG_OK;
    int64_t shape[VG_ST_MAX_DIMS];
    memcpy(shape, t->shape, (size_t)t->ndim * sizeof *shape);
    size_t part_at = at;
    for (int p = 0; p < np && st == VG_OK; p++) {
        if (!t->names[p]) {
            st = bad_spec(a, t, "a part has no name");
            break;
        }
        if ((size_t)snprintf(name, sizeof name, "%s%s", a->prefix, t->names[p]) >= sizeof name) {
            st = vg_error_set(VG_ERR_INVALID_ARG, "%s: tensor name '%s%s' is too long", a->what,
                              a->prefix, t->names[p]);
            break;
        }
        int64_t rows = t->part_rows ? t->part_rows[p] : t->shape[0];
        int64_t take = t->part_row0 ? t->part_take[p] : rows;
        int64_t rp = take > t->rows_pad ? take : t->rows_pad;
        shape[0] = rows;
        if (!a->placing) {
            if (a->ck) {
                st = vg_ckpt_check(a->ck, name, t->ndim, shape);
                if (st == VG_OK) st = mark_used(a, vg_ckpt_find(a->ck, name, NULL));
            }
            int64_t chunk = chunk_rows(stage_row);
            size_t need = (size_t)(rp < chunk ? rp : chunk) * stage_row;
            if (need > a->stage_bytes) a->stage_bytes = need;
        } else {
            part_src src = {.name = name, .ndim = t->ndim, .shape = shape,
                            .row0 = t->part_row0 ? t->part_row0[p] : 0, .rows = take,
                            .col0 = t->col_take > 0 ? t->col0 : 0, .ncols = ncols, .cols = cols,
                            .scale = scale, .scale_name = scale_name};
            st = place_part(a, &src, rp, ld, a->base + part_at);
        }
        part_at += (size_t)rp * row_bytes;
    }
    free(scale);
    if (st != VG_OK) return st;
    if (a->placing) *t->slot = a->base + at;
    a->offset = (end + ARENA_ALIGN - 1) & ~(ARENA_ALIGN - 1);
    a->count++;
    return VG_OK;
}

vg_status vg_arena_padded(vg_arena *a, void **slot, const char *name, int ndim,
                          const int64_t *shape, int64_t rows_pad, int64_t cols_pad)
{
    const char *names[1] = {name};
    return vg_arena_add(a, &(vg_arena_spec){.slot = slot, .names = names, .nparts = 1,
                                            .ndim = ndim, .shape = shape, .rows_pad = rows_pad,
                                            .cols_pad = cols_pad});
}

vg_status vg_arena_one(vg_arena *a, void **slot, const char *name, int ndim, const int64_t *shape)
{
    return vg_arena_padded(a, slot, name, ndim, shape, 0, 0);
}

vg_status vg_arena_prefix(vg_arena *a, const char *fmt, ...)
{
    if (!a || !fmt) return vg_error_set(VG_ERR_INVALID_ARG, "vg_arena_prefix: NULL argument");
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(a->prefix, sizeof a->prefix, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= sizeof a->prefix)
        return vg_error_set(VG_ERR_INVALID_ARG, "%s: tensor name prefix '%s...' is too long",
                            a->what, a->prefix);
    return VG_OK;
}

vg_status vg_arena_skip(vg_arena *a, const char *name)
{
    if (!a || !name) return vg_error_set(VG_ERR_INVALID_ARG, "vg_arena_skip: NULL argument");
    if (a->placing || !a->ck) return VG_OK;
    return mark_used(a, vg_arena_find(a, name));
}

const vg_st_tensor *vg_arena_find(const vg_arena *a, const char *name)
{
    char full[1024];
    if (!a || !a->ck || !name ||
        (size_t)snprintf(full, sizeof full, "%s%s", a->prefix, name) >= sizeof full)
        return NULL;
    return vg_ckpt_find(a->ck, full, NULL);
}

vg_dtype vg_arena_dtype(const vg_arena *a) { return a ? a->dt : VG_DTYPE_COUNT_; }
int vg_arena_synthetic(const vg_arena *a) { return a && !a->ck; }

/* One pass of describe from a fresh prefix. */
static vg_status run_pass(vg_arena *a, vg_arena_describe_fn describe, void *model, int placing)
{
    a->placing = placing;
    a->offset = 0;
    a->count = 0;
    snprintf(a->prefix, sizeof a->prefix, "%s", a->prefix0);
    return describe(a, model);
}

vg_status vg_arena_load(vg_runtime *rt, const vg_arena_source *src, vg_arena_describe_fn describe,
                        void *model, vg_arena_block *out)
{
    if (!rt || !src || !describe || !out)
        return vg_error_set(VG_ERR_INVALID_ARG, "vg_arena_load: NULL argument");
    memset(out, 0, sizeof *out);
    if (src->dtype != VG_DTYPE_F32 && src->dtype != VG_DTYPE_BF16 && src->dtype != VG_DTYPE_F16)
        return vg_error_set(VG_ERR_INVALID_ARG, "vg_arena_load: weights must be F32, BF16 or F16");
    vg_arena a = {.rt = rt, .ck = src->ck, .seed = src->seed, .dt = src->dtype,
                  .es = vg_dtype_size(src->dtype), .what = src->what ? src->what : "model",
                  .prefix0 = src->prefix ? src->prefix : ""};
    if (strlen(a.prefix0) >= sizeof a.prefix)
        return vg_error_set(VG_ERR_INVALID_ARG, "vg_arena_load: prefix too long");
    vg_status st = run_pass(&a, describe, model, 0);
    if (st == VG_OK && a.ck && src->owns) st = check_unaccounted(&a, src->owns);
    free(a.used);
    a.used = NULL;
    if (st != VG_OK || a.count == 0) return st;
    a.planned = a.offset;
    a.planned_count = a.count;
    st = vg_mem_alloc(rt, a.planned, (void **)&a.base);
    if (st != VG_OK)
        return vg_error_prefix("%s: allocating %zu bytes of weights: ", a.what, a.planned);
    st = vg_host_alloc(rt, a.stage_bytes, &a.stage);
    if (st != VG_OK) vg_error_prefix("%s: staging weights (%zu bytes): ", a.what, a.stage_bytes);
    if (st == VG_OK) st = vg_stream_create(rt, &a.s);
    if (st == VG_OK) st = run_pass(&a, describe, model, 1);
    if (st == VG_OK && (a.count != a.planned_count || a.offset != a.planned))
        st = vg_error_set(VG_ERR_INTERNAL, "%s: the model described different tensors in its two "
                                           "passes (%d then %d)", a.what, a.planned_count, a.count);
    /* the last thing queued may be a padding fill: finish it, and see its status */
    if (a.s) {
        vg_status sync = vg_stream_sync(a.s);
        if (st == VG_OK) st = sync;
        vg_stream_destroy(a.s);
    }
    if (a.stage) vg_host_free(rt, a.stage);
    if (st != VG_OK) {
        vg_mem_free(rt, a.base);
        return st;
    }
    out->base = a.base;
    out->bytes = a.planned;
    out->tensors = a.count;
    return VG_OK;
}

void vg_arena_block_free(vg_runtime *rt, vg_arena_block *b)
{
    if (!b) return;
    if (b->base) vg_mem_free(rt, b->base);
    memset(b, 0, sizeof *b);
}
