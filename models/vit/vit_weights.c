/* Weights of the Qwen2.5-VL vision tower: checked against the config, converted to the compute
 * dtype on the host, and uploaded into one device arena. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vg/vg_half.h"
#include "vit_internal.h"

typedef struct load_ctx {
    vg_runtime *rt;
    const vg_ckpt *ck; /* NULL: synthetic weights */
    uint64_t seed;
    const char *prefix;
    vg_dtype dt;
    size_t es;
    vit_weights *w;
    size_t offset;   /* next free byte in the arena (planning pass: the running total) */
    int planning;    /* first pass only adds up sizes */
    void *host, *part; /* staging for one placed tensor, and for one part of it */
    size_t host_bytes;
    vg_bk_stream *s;
} load_ctx;

static size_t align256(size_t x) { return (x + 255) & ~(size_t)255; }

static uint64_t splitmix64(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

/* Deterministic weights for benchmarks: uniform with standard deviation 0.02, a stream per
 * tensor name, as a randomly initialised model would have. */
static void synthesize(const char *name, uint64_t seed, uint64_t count, vg_dtype dt, void *dst)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a of the name */
    for (const char *p = name; *p; p++) h = (h ^ (unsigned char)*p) * 1099511628211ull;
    const float a = 0.02f * 1.7320508f;
    for (uint64_t i = 0; i < count; i++) {
        float v = ((float)(splitmix64(seed ^ h ^ (i * 0x9e3779b97f4a7c15ull)) >> 40) * (1.0f / 16777216.0f) * 2.0f - 1.0f) * a;
        if (dt == VG_DTYPE_F32) ((float *)dst)[i] = v;
        else ((uint16_t *)dst)[i] = dt == VG_DTYPE_BF16 ? vg_f32_to_bf16(v) : vg_f32_to_f16(v);
    }
}

/* Place a tensor made of `nparts` checkpoint tensors stacked along the first dimension, each
 * of logical shape `shape` = [rows, rest...], laid out as [rows_pad, cols_pad] per part where
 * cols = prod(rest). Padding rows and columns are zero. The planning pass only sizes it. */
static vg_status place(load_ctx *L, void **dst, int nparts, const char *const *names, int ndim,
                       const int64_t *shape, int64_t rows_pad, int64_t cols_pad)
{
    int64_t rows = shape[0], cols = 1;
    for (int d = 1; d < ndim; d++) cols *= shape[d];
    if (rows_pad < rows) rows_pad = rows;
    if (cols_pad < cols) cols_pad = cols;
    size_t part_bytes = (size_t)(rows_pad * cols_pad) * L->es, bytes = part_bytes * (size_t)nparts;
    size_t at = L->offset;
    L->offset = align256(L->offset + bytes);
    if (L->planning) {
        if (bytes > L->host_bytes) L->host_bytes = bytes;
        return VG_OK;
    }
    *dst = (char *)L->w->arena + at;
    memset(L->host, 0, bytes);
    for (int p = 0; p < nparts; p++) {
        char name[512];
        snprintf(name, sizeof name, "%s%s", L->prefix, names[p]);
        if (L->ck) {
            vg_status st = vg_ckpt_read(L->ck, name, ndim, shape, L->dt, L->part);
            if (st != VG_OK) return st;
        } else {
            synthesize(name, L->seed, (uint64_t)(rows * cols), L->dt, L->part);
        }
        char *out = (char *)L->host + part_bytes * (size_t)p;
        for (int64_t r = 0; r < rows; r++)
            memcpy(out + (size_t)(r * cols_pad) * L->es, (char *)L->part + (size_t)(r * cols) * L->es,
                   (size_t)cols * L->es);
    }
    const vg_backend_iface *b = vg_runtime_iface(L->rt);
    vg_status st = b->copy_h2d(vg_runtime_device(L->rt), L->s, *dst, L->host, bytes);
    if (st == VG_OK) st = b->stream_sync(vg_runtime_device(L->rt), L->s); /* staging is reused */
    return st;
}

#define ONE(dst, name, ndim, ...)                                                              \
    do {                                                                                       \
        const char *n_[1] = {name};                                                            \
        const int64_t s_[] = {__VA_ARGS__};                                                    \
        vg_status st_ = place(L, (void **)&(dst), 1, n_, ndim, s_, 0, 0);                      \
        if (st_ != VG_OK) return st_;                                                          \
    } while (0)

static vg_status walk(load_ctx *L, const vit_cfg *c)
{
    vit_weights *w = L->w;
    int64_t h = c->hidden, I = c->inter, Ip = c->inter_pad, mh = (int64_t)h * c->unit;
    char n1[128], n2[128];
    {
        /* Conv3d [hidden, C, T, P, P] with stride = kernel is a GEMM over flattened patches. */
        const char *n[1] = {"patch_embed.proj.weight"};
        const int64_t s[] = {h, c->in_ch, c->tpatch, c->patch, c->patch};
        vg_status st = place(L, &w->patch_w, 1, n, 5, s, 0, 0);
        if (st != VG_OK) return st;
    }
    for (int i = 0; i < c->depth; i++) {
        vit_block *B = &w->blocks[i];
        char name[128];
#define BLK(field) (snprintf(name, sizeof name, "blocks.%d.%s", i, field), name)
        ONE(B->norm1, BLK("norm1.weight"), 1, h);
        ONE(B->qkv_w, BLK("attn.qkv.weight"), 2, 3 * h, h);
        ONE(B->qkv_b, BLK("attn.qkv.bias"), 1, 3 * h);
        ONE(B->proj_w, BLK("attn.proj.weight"), 2, h, h);
        ONE(B->proj_b, BLK("attn.proj.bias"), 1, h);
        ONE(B->norm2, BLK("norm2.weight"), 1, h);
        snprintf(n1, sizeof n1, "blocks.%d.mlp.gate_proj.weight", i);
        snprintf(n2, sizeof n2, "blocks.%d.mlp.up_proj.weight", i);
        const char *gw[2] = {n1, n2};
        const int64_t sw[] = {I, h};
        vg_status st = place(L, &B->gu_w, 2, gw, 2, sw, Ip, 0);
        if (st != VG_OK) return st;
        snprintf(n1, sizeof n1, "blocks.%d.mlp.gate_proj.bias", i);
        snprintf(n2, sizeof n2, "blocks.%d.mlp.up_proj.bias", i);
        const char *gb[2] = {n1, n2};
        const int64_t sb[] = {I};
        st = place(L, &B->gu_b, 2, gb, 1, sb, Ip, 0);
        if (st != VG_OK) return st;
        snprintf(n1, sizeof n1, "blocks.%d.mlp.down_proj.weight", i);
        const char *dw[1] = {n1};
        const int64_t sd[] = {h, I};
        st = place(L, &B->down_w, 1, dw, 2, sd, 0, Ip); /* zero columns past inter */
        if (st != VG_OK) return st;
        ONE(B->down_b, BLK("mlp.down_proj.bias"), 1, h);
#undef BLK
    }
    ONE(w->ln_q, "merger.ln_q.weight", 1, h);
    ONE(w->m1_w, "merger.mlp.0.weight", 2, mh, mh);
    ONE(w->m1_b, "merger.mlp.0.bias", 1, mh);
    ONE(w->m2_w, "merger.mlp.2.weight", 2, (int64_t)c->out_hidden, mh);
    ONE(w->m2_b, "merger.mlp.2.bias", 1, (int64_t)c->out_hidden);
    return VG_OK;
}

vg_status vit_weights_load(vg_runtime *rt, const vg_ckpt *ck, uint64_t seed, const vit_cfg *cfg,
                           vg_dtype dt, vit_weights *w)
{
    memset(w, 0, sizeof *w);
    /* Hub checkpoints name the tower visual.*, newer exports model.visual.* */
    const char *prefix = "visual.";
    if (ck && !vg_ckpt_find(ck, "visual.patch_embed.proj.weight", NULL)) {
        if (!vg_ckpt_find(ck, "model.visual.patch_embed.proj.weight", NULL))
            return vg_set_error(VG_ERR_NOT_FOUND, "%s: no vision tower weights (neither "
                                                  "visual.patch_embed.proj.weight nor "
                                                  "model.visual.patch_embed.proj.weight)",
                                vg_ckpt_dir(ck));
        prefix = "model.visual.";
    }
    load_ctx L = {.rt = rt, .ck = ck, .seed = seed, .prefix = prefix, .dt = dt,
                  .es = vg_dtype_size(dt), .w = w, .planning = 1};
    vg_status st = walk(&L, cfg);
    if (st != VG_OK) return st;
    const vg_backend_iface *b = vg_runtime_iface(rt);
    vg_bk_device *dev = vg_runtime_device(rt);
    w->bytes = L.offset;
    st = b->mem_alloc(dev, w->bytes, &w->arena);
    if (st != VG_OK) return vg_error_prefix("vit: allocating %zu bytes of weights: ", w->bytes);
    L.host = malloc(L.host_bytes);
    L.part = malloc(L.host_bytes);
    st = L.host && L.part ? b->stream_create(dev, &L.s)
                          : vg_set_error(VG_ERR_OUT_OF_MEMORY, "vit: no host memory to stage weights");
    if (st == VG_OK) {
        L.planning = 0;
        L.offset = 0;
        st = walk(&L, cfg);
    }
    if (L.s) b->stream_destroy(dev, L.s);
    free(L.host);
    free(L.part);
    if (st != VG_OK) vit_weights_free(rt, w);
    return st;
}

void vit_weights_free(vg_runtime *rt, vit_weights *w)
{
    if (w->arena) vg_runtime_iface(rt)->mem_free(vg_runtime_device(rt), w->arena);
    memset(w, 0, sizeof *w);
}
