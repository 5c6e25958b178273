# SPDX-License-Identifier: Apache-2.0
fails 1 "$T/err" vit encode --model "$FIX/model" --input "$FIX/two_images.input.safetensors" \
    --output "$T/o.safetensors" --expected "$FIX/two_images.input.safetensors" &&
grep -q "tensor 'embeddings' is missing" "$T/err"
