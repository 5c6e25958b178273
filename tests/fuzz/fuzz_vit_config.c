/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer target: config.json of the vision encoder. An accepted config must describe a
 * model the kernels can run: divisible heads, rotary quarters, block indices in range, a patch
 * width equal to channels x temporal patch x patch²; Qwen2.5-VL: whole windows; Qwen3-VL: a
 * square position table and distinct deepstack blocks. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "vit/vit_common.h"

#include "fuzz_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    cJSON *root = cJSON_ParseWithLength((const char *)data, size);
    if (!root) return 0;
    vit_cfg c;
    if (vit_config_parse(root, "fuzz", &c) == VG_OK) {
        CHECK(c.depth >= 1 && c.depth <= VIT_MAX_DEPTH);
        CHECK(c.heads >= 1 && c.hidden % c.heads == 0 && c.head_dim * c.heads == c.hidden);
        CHECK(c.head_dim % 4 == 0);
        CHECK(c.unit == c.merge * c.merge);
        CHECK(c.patch_dim == (int64_t)c.in_ch * c.tpatch * c.patch * c.patch);
        for (int i = c.depth; i < VIT_MAX_DEPTH; i++) CHECK(!c.fullatt[i]);
        if (c.family == VIT_QWEN3) {
            CHECK(c.pos_side >= 1 && c.pos_side * c.pos_side == c.num_pos);
            CHECK(c.num_deepstack >= 0 && c.num_deepstack <= c.depth);
            for (int k = 0; k < c.num_deepstack; k++) {
                CHECK(c.deepstack_block[k] >= 0 && c.deepstack_block[k] < c.depth);
                for (int j = 0; j < k; j++) CHECK(c.deepstack_block[j] != c.deepstack_block[k]);
            }
            CHECK(c.theta > 0.0f);
        } else {
            CHECK(c.family == VIT_QWEN2_5);
            CHECK(c.window % (c.merge * c.patch) == 0 && c.win_units >= 1);
        }
    }
    cJSON_Delete(root);
    return 0;
}
