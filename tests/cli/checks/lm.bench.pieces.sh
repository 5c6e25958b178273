# SPDX-License-Identifier: Apache-2.0
"$VG" lm bench --config qwen2-tiny --dtype f32 --batch 2 --prompt 8 --new 2 --pieces --json >"$T/out.json" &&
json_has "$T/out.json" '[p["piece"] for p in d["batches"][0]["pieces"]] == ["embed", "attn_in", "attention", "attn_out_mlp", "head"]' &&
json_has "$T/out.json" '[p["count"] for p in d["batches"][0]["pieces"]] == [1, 3, 3, 3, 1]' &&
json_has "$T/out.json" 'abs(sum(p["ms_per_step"] for p in d["batches"][0]["pieces"]) - d["batches"][0]["pieces_ms_per_step"]) < 1e-9' &&
"$VG" lm bench --config qwen2-tiny --dtype f32 --batch 1 --prompt 8 --new 2 --pieces | grep -Eq "^  attention +3x +[0-9.]+ ms"
