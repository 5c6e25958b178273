/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer target: the input file of vg lm generate (tools/lm_input.c), a safetensors image.
 * Byte 0 picks the vocabulary size (1..256), the rest is the file. An accepted file must hold
 * 1..VG_LM_MAX_PROMPTS prompts of at least one token each, filling input_ids exactly, every id
 * inside the vocabulary, and max_new_tokens >= 1 or absent (-1); a refused one leaves nothing
 * allocated (LeakSanitizer). */
#include <stdint.h>
#include <stdlib.h>

#include "lm_input.h"

#include "fuzz_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) return 0;
    int vocab = 1 + data[0];
    vg_st_file *f = NULL;
    if (vg_st_open_memory(data + 1, size - 1, "fuzz", &f) != VG_OK) return 0;
    vg_lm_prompts p;
    if (vg_lm_prompts_read(f, vocab, &p) == VG_OK) {
        const vg_st_tensor *ids = vg_st_find(f, "input_ids");
        CHECK(ids && p.B >= 1 && p.B <= VG_LM_MAX_PROMPTS);
        CHECK(p.N == -1 || p.N >= 1);
        int64_t total = 0;
        for (int b = 0; b < p.B; b++) {
            CHECK(p.lens[b] >= 1);
            total += p.lens[b];
        }
        CHECK(total == ids->shape[0]);
        for (int64_t i = 0; i < total; i++) CHECK(p.ids[i] >= 0 && p.ids[i] < vocab);
        vg_lm_prompts_free(&p);
    } else {
        CHECK(!p.lens && !p.ids);
    }
    vg_st_close(f);
    return 0;
}
