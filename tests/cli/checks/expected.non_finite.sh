# SPDX-License-Identifier: Apache-2.0
st_patch "$FIX/two_images.expected.safetensors" "$T/r" embeddings nan &&
fails 1 "$T/err" vit encode --model "$FIX/model" --input "$FIX/two_images.input.safetensors" --output "$T/o" \
    --expected "$T/r" >"$T/out" && grep -q "'embeddings'\[0, 0\] is nan: a reference must be finite" "$T/err" &&
! grep -q "within tolerance" "$T/out" && test ! -e "$T/o" &&
st_patch "$LM/prompts.expected.safetensors" "$T/l" logits.1 nan &&
fails 1 "$T/err" lm generate --model "$LM/model" --input "$LM/prompts.input.safetensors" --expected "$T/l" >"$T/out" &&
grep -q "'logits.1' element 0 is nan: a reference must be finite" "$T/err" && test ! -s "$T/out"
