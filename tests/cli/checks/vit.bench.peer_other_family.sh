# SPDX-License-Identifier: Apache-2.0
printf '%s\n' '{"side": 256, "S": 256, "hf_eager_ms": 9.5, "torch_graph_ms": 8.5, "compiled_graph_ms": 8.25}' >"$T/p.jsonl" &&
fails 1 "$T/err" vit bench --config qwen2.5-vl-tiny --sizes 56 --iters 100000 --peer "$T/p.jsonl" &&
grep -q "the peer lines are all for Qwen3-VL; this model (qwen2_5_vl) is Qwen2.5-VL" "$T/err"
