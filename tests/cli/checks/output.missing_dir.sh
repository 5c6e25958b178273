# SPDX-License-Identifier: Apache-2.0
fails 1 "$T/err" vit encode --model "$FIX/model" --input "$FIX/two_images.input.safetensors" \
    --output "$T/absent/out.safetensors" &&
grep -q "cannot write $T/absent/out.safetensors: directory $T/absent does not exist" "$T/err"
