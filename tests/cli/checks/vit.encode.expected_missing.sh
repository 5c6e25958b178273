# SPDX-License-Identifier: Apache-2.0
fails 1 "$T/err" vit encode --model "$FIX/model" --input "$FIX/two_images.input.safetensors" \
    --output "$T/out.safetensors" --expected "$T/absent.safetensors" &&
grep -q "absent.safetensors" "$T/err" && test ! -e "$T/out.safetensors"
