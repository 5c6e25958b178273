# SPDX-License-Identifier: Apache-2.0
fails 1 "$T/err" vit encode --model "$FIX/model" --input "$FIX/two_images.input.safetensors" \
    --output "$T/o.safetensors" --expected "$FIX/one_image.expected.safetensors" &&
grep -q "'embeddings' has shape \[64, 96\], the output will have \[88, 96\]" "$T/err"
