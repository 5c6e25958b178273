# SPDX-License-Identifier: Apache-2.0
cp "$FIX/two_images.expected.safetensors" "$T/ref" && ln "$T/ref" "$T/hard" &&
fails 2 "$T/err" vit encode --model "$FIX/model" --input "$FIX/two_images.input.safetensors" \
    --output "$T/hard" --expected "$T/ref" && grep -q "is the same file as --expected" "$T/err" &&
cmp "$T/ref" "$FIX/two_images.expected.safetensors"
