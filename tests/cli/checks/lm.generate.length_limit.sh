# SPDX-License-Identifier: Apache-2.0
mkdir "$T/m" && ln -s "$LM/model/model.safetensors" "$T/m/" &&
sed 's/"max_position_embeddings": [0-9]*/"max_position_embeddings": 16/' "$LM/model/config.json" >"$T/m/config.json" &&
grep -q '"max_position_embeddings": 16' "$T/m/config.json" &&
"$VG" lm generate --model "$T/m" --prompt-ids '1,2,3;4' --max-new-tokens 12 --ignore-eos --json >"$T/j" &&
json_has "$T/j" '[len(g) for g in d["generated"]] == [12, 12]' &&
fails 2 "$T/err" lm generate --model "$T/m" --prompt-ids '1,2,3;4' --max-new-tokens 14 &&
grep -q "at most 13 new tokens fit" "$T/err" &&
"$VG" lm generate --model "$T/m" --prompt-ids 1,2,3 --max-new-tokens 13 --ignore-eos --json >"$T/j" &&
json_has "$T/j" 'len(d["generated"][0]) == 13' &&
st_write "$T/in" 'input_ids I64 1,2,3' 'prompt_lens I64 3' 'max_new_tokens I64 13' &&
"$VG" lm generate --model "$T/m" --input "$T/in" --ignore-eos >/dev/null &&
"$VG" lm bench --config "$T/m/config.json" --batch 1 --prompt 10 --new 4 >/dev/null &&
fails 2 "$T/err" lm bench --config "$T/m/config.json" --batch 1 --prompt 11 --new 4
