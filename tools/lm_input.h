/* SPDX-License-Identifier: Apache-2.0 */
/* The input file of vg lm generate: input_ids I64 or I32 [T] (the prompts one after another),
 * prompt_lens [B] and, optionally, max_new_tokens [1]. Everything is checked before it is used;
 * errors (vg_last_error) name the file, the tensor and the allowed values. Kept apart from the
 * command so that the fuzz target (tests/fuzz/fuzz_lm_input.c) reaches it. */
#ifndef VG_LM_INPUT_H
#define VG_LM_INPUT_H

#include <stdint.h>

#include "vg/vg_safetensors.h"

#define VG_LM_MAX_PROMPTS 4096

typedef struct vg_lm_prompts {
    int B;
    int64_t *lens;  /* B */
    int32_t *ids;   /* all prompts, one after another */
    int64_t N;      /* max_new_tokens of the file (>= 1), or -1 when it has none */
} vg_lm_prompts;

/* The prompts of f, every id in [0, vocab). VG_OK, or an error with p left empty. */
vg_status vg_lm_prompts_read(const vg_st_file *f, int vocab, vg_lm_prompts *p);
void vg_lm_prompts_free(vg_lm_prompts *p);

#endif
