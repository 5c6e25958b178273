# SPDX-License-Identifier: Apache-2.0
in=$LMB/prompts.input.safetensors
"$VG" lm generate --model "$LMB/model" --input "$in" --ignore-eos --json >"$T/all" &&
x=$(python3 -c 'import json, sys; g = json.load(open(sys.argv[1]))["generated"][0]; k = max(i for i in range(1, len(g) - 1) if g[i] not in g[:i]); print(g[k], k)' "$T/all") &&
set -- $x && eos=$1 k=$2 && test "$k" -ge 3 && echo "EOS $eos after $k tokens" &&
"$VG" lm generate --model "$LMB/model" --input "$in" --eos 511 --eos $eos --json --output "$T/o.safetensors" >"$T/cut" &&
python3 -c 'import json, sys; a = json.load(open(sys.argv[1])); c = json.load(open(sys.argv[2])); k = int(sys.argv[3]); sys.exit(0 if c["generated"][0] == a["generated"][0][:k + 1] and c["stopped_at_eos"][0] and not a["stopped_at_eos"][0] and c["eos"] == [511, int(sys.argv[4])] else 1)' "$T/all" "$T/cut" "$k" "$eos" &&
python3 -c 'import json, struct, sys; b = open(sys.argv[1], "rb").read(); n = struct.unpack("<Q", b[:8])[0]; h = json.loads(b[8:8 + n]); s, e = h["sequence.0"]["data_offsets"]; q = struct.unpack("<%dq" % ((e - s) // 8), b[8 + n + s:8 + n + e]); g = json.load(open(sys.argv[3]))["generated"][0]; k = int(sys.argv[2]); sys.exit(0 if h["logits.0"]["shape"] == [k + 1, 512] and list(q[-(k + 1):]) == g and len(g) == k + 1 else 1)' "$T/o.safetensors" "$k" "$T/cut" &&
lm_copy "$LMB/model" "$T/g" && printf '{"eos_token_id": [%s, 511]}' "$eos" >"$T/g/generation_config.json" &&
"$VG" lm generate --model "$T/g" --input "$in" --json >"$T/gen" &&
python3 -c 'import json, sys; a = json.load(open(sys.argv[1])); c = json.load(open(sys.argv[2])); sys.exit(0 if c["generated"] == a["generated"] and c["eos"] == [int(sys.argv[3]), 511] else 1)' "$T/cut" "$T/gen" "$eos" &&
gen --prompt-ids 1,2 --max-new-tokens 1 --json >"$T/default" && json_has "$T/default" 'd["eos"] == [2]' &&
fails 2 "$T/err" lm generate --model "$LM/model" --prompt-ids 1 --max-new-tokens 1 --eos 2 --ignore-eos &&
fails 2 "$T/err" lm generate --model "$LM/model" --prompt-ids 1 --max-new-tokens 1 --eos 512 &&
grep -q "eos 512 is outside the vocabulary \[0, 512)" "$T/err" &&
printf '{"eos_token_id": 600}' >"$T/g/generation_config.json" &&
fails 1 "$T/err" lm generate --model "$T/g" --prompt-ids 1 --max-new-tokens 1 &&
grep -q "generation_config.json: eos_token_id must be a token id in \[0, vocab_size 512)" "$T/err"
