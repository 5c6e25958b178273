# SPDX-License-Identifier: Apache-2.0
"$VG" vit encode --model "$FIX_BF16/model" --input "$FIX_BF16/two_images.input.safetensors" \
    --output "$T/o.safetensors" --expected "$FIX_BF16/two_images.expected.safetensors" >"$T/out" &&
cat "$T/out" && grep -q "tolerance 0.03: within tolerance" "$T/out"
