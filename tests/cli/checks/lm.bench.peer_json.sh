# SPDX-License-Identifier: Apache-2.0
printf '{"B": 1, "prompt": 8, "new": 2, "eager_ms_per_step": 15.5, "static_compiled_ms_per_step": 2.5}\n' >"$T/peer.jsonl" &&
printf '{"B": 2, "prompt": 8, "eager_error": "OOM", "static_compiled_ms_per_step": 4}\n' >>"$T/peer.jsonl" &&
"$VG" lm bench --config qwen2-tiny --dtype f32 --batch 1,2,3 --prompt 8 --new 2 --peer "$T/peer.jsonl" \
    --json >"$T/out.json" &&
json_has "$T/out.json" 'd["peer"].endswith("peer.jsonl") and len(d["batches"]) == 3' &&
json_has "$T/out.json" 'd["batches"][0]["peer_eager_ms_per_step"] == 15.5 and d["batches"][0]["peer_static_compiled_ms_per_step"] == 2.5' &&
json_has "$T/out.json" 'abs(d["batches"][0]["speedup_vs_peer_compiled"] * d["batches"][0]["graph_ms_per_step"] - 2.5) < 1e-9' &&
json_has "$T/out.json" 'abs(d["batches"][0]["speedup_vs_peer_eager"] * d["batches"][0]["graph_ms_per_step"] - 15.5) < 1e-9' &&
json_has "$T/out.json" '"peer_eager_ms_per_step" not in d["batches"][1] and d["batches"][1]["peer_static_compiled_ms_per_step"] == 4' &&
json_has "$T/out.json" 'not any(k.startswith("peer") or k.startswith("speedup_vs") for k in d["batches"][2])'
