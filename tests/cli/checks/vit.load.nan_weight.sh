# SPDX-License-Identifier: Apache-2.0
cp -r "$V3/model" "$T/m" && patch_nan "$T/m/model.safetensors" model.visual.blocks.0.mlp.linear_fc1.weight &&
fails 1 "$T/err" vit encode --model "$T/m" --input "$V3/two_images.input.safetensors" \
    --output "$T/o.safetensors" &&
grep -q "tensor 'model.visual.blocks.0.mlp.linear_fc1.weight': element 0 is NaN" "$T/err" &&
test ! -e "$T/o.safetensors"
