/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer target: config.json of the language model (lm_config_parse) and its eos_token_id
 * (lm_eos_read). An accepted config must describe a model the kernels can run: every size
 * positive and bounded, query heads a multiple of the KV heads, head_dim a multiple of 8 up to
 * 256, the intermediate size padded to 16, finite eps and theta; the EOS ids inside the
 * vocabulary, at most VG_LM_MAX_EOS of them. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "lm/lm_internal.h"

#include "fuzz_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    cJSON *root = cJSON_ParseWithLength((const char *)data, size);
    if (!root) return 0;
    lm_cfg c;
    if (lm_config_parse(root, "fuzz", &c) == VG_OK) {
        CHECK(c.arch == LM_QWEN2 || c.arch == LM_QWEN3);
        CHECK(c.layers >= 1 && c.layers <= LM_MAX_LAYERS);
        CHECK(c.hidden >= 1 && c.inter >= 1 && c.vocab >= 1 && c.max_pos >= 1);
        CHECK(c.heads >= 1 && c.kv_heads >= 1 && c.heads % c.kv_heads == 0);
        CHECK(c.head_dim >= 8 && c.head_dim % 8 == 0 && c.head_dim <= 256);
        CHECK(c.inter_pad >= c.inter && c.inter_pad % 16 == 0 && c.inter_pad - c.inter < 16);
        CHECK(isfinite(c.eps) && c.eps >= 0 && isfinite(c.theta) && c.theta > 0);
        CHECK(c.qkv_bias == (c.arch == LM_QWEN2) && c.qk_norm == (c.arch == LM_QWEN3));
        int32_t eos[VG_LM_MAX_EOS];
        int n = -1;
        if (lm_eos_read(NULL, root, "fuzz", c.vocab, eos, &n) == VG_OK) {
            CHECK(n >= 0 && n <= VG_LM_MAX_EOS);
            for (int i = 0; i < n; i++) CHECK(eos[i] >= 0 && eos[i] < c.vocab);
        }
    }
    cJSON_Delete(root);
    return 0;
}
