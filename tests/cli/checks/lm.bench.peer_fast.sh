# SPDX-License-Identifier: Apache-2.0
printf '%s\n' '{"B": 1, "prompt": 8, "new": 2, "eager_ms_per_step": 15.5, "static_compiled_ms_per_step": 2.5}' \
  '{"B": 1, "prompt": 8, "new": 2, "step_ms": 1.25, "device_ms": 1.125}' \
  '{"B": 2, "prompt": 8, "new": 2, "error": "RuntimeError()"}' \
  '{"B": 3, "prompt": 8, "new": 2, "step_ms": 9, "device_ms": 8}' \
  '{"B": 3, "prompt": 8, "new": 2, "step_ms": 3.5}' >"$T/peer.jsonl" &&
"$VG" lm bench --config qwen2-tiny --dtype f32 --batch 1,2,3 --prompt 8 --new 2 --peer "$T/peer.jsonl" \
    --json >"$T/out.json" &&
json_has "$T/out.json" 'd["batches"][0]["peer_step_ms"] == 1.25 and d["batches"][0]["peer_device_ms"] == 1.125' &&
json_has "$T/out.json" 'abs(d["batches"][0]["speedup_vs_peer"] * d["batches"][0]["graph_ms_per_step"] - 1.25) < 1e-9' &&
json_has "$T/out.json" 'd["batches"][0]["peer_static_compiled_ms_per_step"] == 2.5' &&
json_has "$T/out.json" 'not any(k.startswith("peer") or k.startswith("speedup_vs") for k in d["batches"][1])' &&
json_has "$T/out.json" 'd["batches"][2]["peer_step_ms"] == 3.5 and "peer_device_ms" not in d["batches"][2]' &&
"$VG" lm bench --config qwen2-tiny --dtype f32 --batch 1,2,3 --prompt 8 --new 2 --peer "$T/peer.jsonl" \
    >"$T/out" && cat "$T/out" &&
grep -q "beside the peer" "$T/out" && grep -q "beside the fast peer" "$T/out" &&
grep -Eq "^ +1 +[0-9.]+ +1\.250 +[0-9.]+x +1\.125$" "$T/out" &&
grep -Eq "^ +2 +[0-9.]+ +- +- +-$" "$T/out" && grep -Eq "^ +3 +[0-9.]+ +3\.500 +[0-9.]+x +-$" "$T/out" &&
printf '%s\n' '{"B": 1, "step_ms": 1.25}' >"$T/fast.jsonl" &&
"$VG" lm bench --config qwen2-tiny --dtype f32 --batch 1 --prompt 8 --new 2 --peer "$T/fast.jsonl" >"$T/out2" &&
cat "$T/out2" && ! grep -q "beside the peer" "$T/out2" && grep -q "beside the fast peer" "$T/out2"
