# SPDX-License-Identifier: Apache-2.0
for l in 8,4 4,4; do
  fails 2 "$T/err" lm generate --model "$VG_SRC/tests/data/qwen2_tiny/model" --prompt-ids 1 --max-new-tokens 1 \
      --capture-sizes $l && grep -q "capture-sizes wants up to 256 positive integers in ascending order" "$T/err" &&
  fails 2 "$T/err" vit encode --model "$FIX/model" --input "$FIX/one_image.input.safetensors" --output "$T/o" \
      --capture-sizes $l && grep -q "capture-sizes wants up to 256 positive integers in ascending order" "$T/err" || exit 1
done
