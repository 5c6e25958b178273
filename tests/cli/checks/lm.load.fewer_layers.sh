# SPDX-License-Identifier: Apache-2.0
cp -r "$LM/model" "$T/m" && grep -q '"num_hidden_layers": 3' "$T/m/config.json" &&
sed -i 's/"num_hidden_layers": 3/"num_hidden_layers": 2/' "$T/m/config.json" &&
fails 1 "$T/err" lm generate --model "$T/m" --input "$LM/prompts.input.safetensors" --max-new-tokens 2 &&
grep -q "tensors of the checkpoint are not accounted for by config.json: 'model.layers.2\." "$T/err"
