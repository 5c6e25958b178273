# SPDX-License-Identifier: Apache-2.0
cp -r "$LM/model" "$T/m" && patch_nan "$T/m/model.safetensors" model.norm.weight &&
fails 1 "$T/err" lm generate --model "$T/m" --input "$LM/prompts.input.safetensors" --max-new-tokens 2 &&
grep -q "model.safetensors: tensor 'model.norm.weight': element 0 is NaN" "$T/err"
