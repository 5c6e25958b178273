/* SPDX-License-Identifier: Apache-2.0 */
#include "lm_input.h"

#include <stdlib.h>
#include <string.h>

#include "vg/vg.h"

static int64_t get_i64(const vg_st_tensor *t, int64_t i)
{
    if (t->dtype == VG_DTYPE_I32) {
        int32_t v;
        memcpy(&v, (const char *)t->data + 4 * i, 4);
        return v;
    }
    int64_t v;
    memcpy(&v, (const char *)t->data + 8 * i, 8);
    return v;
}

static int is_int(const vg_st_tensor *t) { return t->dtype == VG_DTYPE_I64 || t->dtype == VG_DTYPE_I32; }

static vg_status read_all(const vg_st_file *f, int vocab, vg_lm_prompts *p)
{
    const char *path = vg_st_path(f);
    const vg_st_tensor *ids = vg_st_find(f, "input_ids"), *pl = vg_st_find(f, "prompt_lens");
    const vg_st_tensor *mn = vg_st_find(f, "max_new_tokens");
    if (!ids || !pl)
        return vg_error_set(VG_ERR_FORMAT, "%s: tensor '%s' is missing", path, !ids ? "input_ids" : "prompt_lens");
    if (!is_int(ids) || !is_int(pl) || ids->ndim != 1 || pl->ndim != 1)
        return vg_error_set(VG_ERR_FORMAT, "%s: input_ids and prompt_lens must be 1-D I64 or I32 tensors", path);
    if (pl->shape[0] < 1 || pl->shape[0] > VG_LM_MAX_PROMPTS)
        return vg_error_set(VG_ERR_FORMAT, "%s: prompt_lens holds %lld prompts (1..%d)", path,
                            (long long)pl->shape[0], VG_LM_MAX_PROMPTS);
    p->N = -1;
    if (mn) {
        if (!is_int(mn) || mn->numel != 1)
            return vg_error_set(VG_ERR_FORMAT, "%s: max_new_tokens must be one I64 or I32 number", path);
        p->N = get_i64(mn, 0);
        if (p->N < 1)
            return vg_error_set(VG_ERR_FORMAT, "%s: max_new_tokens is %lld; it must be at least 1", path,
                                (long long)p->N);
    }
    p->B = (int)pl->shape[0];
    p->lens = malloc((size_t)p->B * sizeof(int64_t));
    p->ids = malloc((size_t)(ids->shape[0] ? ids->shape[0] : 1) * sizeof(int32_t));
    if (!p->lens || !p->ids) return vg_error_set(VG_ERR_OUT_OF_MEMORY, "%s: out of memory", path);
    int64_t total = 0;
    for (int b = 0; b < p->B; b++) {
        p->lens[b] = get_i64(pl, b);
        if (p->lens[b] < 1 || p->lens[b] > ids->shape[0] - total)
            return vg_error_set(VG_ERR_FORMAT, "%s: prompt_lens[%d] = %lld does not fit in input_ids (%lld "
                                               "tokens)", path, b, (long long)p->lens[b], (long long)ids->shape[0]);
        total += p->lens[b];
    }
    if (total != ids->shape[0])
        return vg_error_set(VG_ERR_FORMAT, "%s: prompt_lens add up to %lld, input_ids has %lld", path,
                            (long long)total, (long long)ids->shape[0]);
    for (int64_t i = 0; i < total; i++) {
        int64_t v = get_i64(ids, i);
        if (v < 0 || v >= vocab)
            return vg_error_set(VG_ERR_FORMAT, "%s: input_ids[%lld] = %lld is outside the vocabulary [0, %d)",
                                path, (long long)i, (long long)v, vocab);
        p->ids[i] = (int32_t)v;
    }
    return VG_OK;
}

vg_status vg_lm_prompts_read(const vg_st_file *f, int vocab, vg_lm_prompts *p)
{
    memset(p, 0, sizeof *p);
    vg_status st = read_all(f, vocab, p);
    if (st != VG_OK) vg_lm_prompts_free(p);
    return st;
}

void vg_lm_prompts_free(vg_lm_prompts *p)
{
    free(p->lens);
    free(p->ids);
    memset(p, 0, sizeof *p);
}
