/* Weights of the Qwen2.5-VL vision tower: checked against the config, converted to the compute
 * dtype on the host, and uploaded into one device arena. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vit_internal.h"

typedef struct load_ctx {
    vg_runtime *rt;
    const vg_ckpt *ck;
    const char *prefix;
    vg_dtype dt;
    size_t es;
    vit_weights *w;
    size_t offset;   /* next free byte in the arena (planning pass: the running total) */
    int planning;    /* first pass only adds up sizes */
    void *host;      /* staging for one tensor */
    size_t host_bytes;
    vg_bk_stream *s;
} load_ctx;

static size_t align256(size_t x) { return (x + 255) & ~(size_t)255; }

/* Place `count` elements at the next arena slot; on the loading pass fill them from the
 * checkpoint tensors listed in parts (stacked along the first dimension). */
static vg_status place(load_ctx *L, void **dst, int nparts, const char *const *names, int ndim,
                       const int64_t *shape)
{
    size_t per = L->es;
    for (int d = 0; d < ndim; d++) per *= (size_t)shape[d];
    size_t bytes = per * (size_t)nparts;
    size_t at = L->offset;
    L->offset = align256(L->offset + bytes);
    if (L->planning) return VG_OK;
    *dst = (char *)L->w->arena + at;
    if (bytes > L->host_bytes) return vg_set_error(VG_ERR_INTERNAL, "vit: staging too small");
    for (int p = 0; p < nparts; p++) {
        char name[512];
        snprintf(name, sizeof name, "%s%s", L->prefix, names[p]);
        vg_status st = vg_ckpt_read(L->ck, name, ndim, shape, L->dt, (char *)L->host + per * (size_t)p);
        if (st != VG_OK) return st;
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
        vg_status st_ = place(L, (void **)&(dst), 1, n_, ndim, s_);                            \
        if (st_ != VG_OK) return st_;                                                          \
    } while (0)

static vg_status walk(load_ctx *L, const vit_cfg *c)
{
    vit_weights *w = L->w;
    int64_t h = c->hidden, I = c->inter, mh = (int64_t)h * c->unit;
    char n1[128], n2[128];
    {
        /* Conv3d [hidden, C, T, P, P] with stride = kernel is a GEMM over flattened patches. */
        const char *n[1] = {"patch_embed.proj.weight"};
        const int64_t s[] = {h, c->in_ch, c->tpatch, c->patch, c->patch};
        vg_status st = place(L, &w->patch_w, 1, n, 5, s);
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
        vg_status st = place(L, &B->gu_w, 2, gw, 2, sw);
        if (st != VG_OK) return st;
        snprintf(n1, sizeof n1, "blocks.%d.mlp.gate_proj.bias", i);
        snprintf(n2, sizeof n2, "blocks.%d.mlp.up_proj.bias", i);
        const char *gb[2] = {n1, n2};
        const int64_t sb[] = {I};
        st = place(L, &B->gu_b, 2, gb, 1, sb);
        if (st != VG_OK) return st;
        ONE(B->down_w, BLK("mlp.down_proj.weight"), 2, h, I);
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

static size_t largest_tensor(const vit_cfg *c, size_t es)
{
    size_t h = (size_t)c->hidden, mh = h * (size_t)c->unit, m = h * (size_t)c->patch_dim;
    size_t cand[] = {3 * h * h, 2 * (size_t)c->inter * h, mh * mh, (size_t)c->out_hidden * mh};
    for (size_t i = 0; i < sizeof cand / sizeof cand[0]; i++) m = cand[i] > m ? cand[i] : m;
    return m * es;
}

vg_status vit_weights_load(vg_runtime *rt, const vg_ckpt *ck, const vit_cfg *cfg, vg_dtype dt,
                           vit_weights *w)
{
    memset(w, 0, sizeof *w);
    /* Hub checkpoints name the tower visual.*, newer exports model.visual.* */
    const char *prefix = vg_ckpt_find(ck, "visual.patch_embed.proj.weight", NULL) ? "visual."
                         : vg_ckpt_find(ck, "model.visual.patch_embed.proj.weight", NULL)
                             ? "model.visual."
                             : NULL;
    if (!prefix)
        return vg_set_error(VG_ERR_NOT_FOUND, "%s: no vision tower weights (neither "
                                              "visual.patch_embed.proj.weight nor "
                                              "model.visual.patch_embed.proj.weight)", vg_ckpt_dir(ck));
    load_ctx L = {.rt = rt, .ck = ck, .prefix = prefix, .dt = dt, .es = vg_dtype_size(dt), .w = w,
                  .planning = 1};
    vg_status st = walk(&L, cfg);
    if (st != VG_OK) return st;
    const vg_backend_iface *b = vg_runtime_iface(rt);
    vg_bk_device *dev = vg_runtime_device(rt);
    w->bytes = L.offset;
    st = b->mem_alloc(dev, w->bytes, &w->arena);
    if (st != VG_OK) return vg_error_prefix("vit: allocating %zu bytes of weights: ", w->bytes);
    L.host_bytes = largest_tensor(cfg, L.es) * 2;
    L.host = malloc(L.host_bytes);
    st = L.host ? b->stream_create(dev, &L.s)
                : vg_set_error(VG_ERR_OUT_OF_MEMORY, "vit: no host memory to stage weights");
    if (st == VG_OK) {
        L.planning = 0;
        L.offset = 0;
        st = walk(&L, cfg);
    }
    if (L.s) b->stream_destroy(dev, L.s);
    free(L.host);
    if (st != VG_OK) vit_weights_free(rt, w);
    return st;
}

void vit_weights_free(vg_runtime *rt, vit_weights *w)
{
    if (w->arena) vg_runtime_iface(rt)->mem_free(vg_runtime_device(rt), w->arena);
    memset(w, 0, sizeof *w);
}
