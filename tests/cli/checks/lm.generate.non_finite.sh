# SPDX-License-Identifier: Apache-2.0
mkdir -p "$T/m" && ln -s "$LM/model/config.json" "$T/m/" &&
st_patch "$LM/model/model.safetensors" "$T/m/model.safetensors" model.norm.weight 3e38 &&
fails 1 "$T/err" lm generate --model "$T/m" --prompt-ids 1,2,3 --max-new-tokens 3 --output "$T/o.safetensors" >"$T/out" &&
grep -q "prompt 0, new token 0: logit [0-9]* is .*not finite" "$T/err" && test ! -s "$T/out" && test ! -e "$T/o.safetensors"
