# SPDX-License-Identifier: Apache-2.0
cp -r "$LM/model" "$T/m" && ln -s m/config.json "$T/cfg" || exit 1
for o in "$T/m/model.safetensors" "$T/cfg"; do
  fails 2 "$T/err" lm generate --model "$T/m" --prompt-ids 1,2 --max-new-tokens 2 --output "$o" &&
  grep -q "output $o is the model's file $T/m/" "$T/err" || exit 1
done
cmp "$T/m/model.safetensors" "$LM/model/model.safetensors" && cmp "$T/m/config.json" "$LM/model/config.json" &&
cp -r "$FIX/model" "$T/v" &&
fails 2 "$T/err" vit encode --model "$T/v" --input "$FIX/two_images.input.safetensors" --output "$T/v/model.safetensors" &&
grep -q "is the model's file $T/v/model.safetensors" "$T/err" && cmp "$T/v/model.safetensors" "$FIX/model/model.safetensors" &&
gen --prompt-ids 1,2 --max-new-tokens 2 --output "$T/m/new.safetensors" >/dev/null
