# SPDX-License-Identifier: Apache-2.0
printf '{"S": 16, "hf_eager_ms": 7.25, "torch_blocks_graph_ms": 3.5}\n' >"$T/peer.jsonl" &&
bench --plot "$T/p.svg" --peer "$T/peer.jsonl" >"$T/out" && cat "$T/out" &&
grep -q "7.25 *3.50" "$T/out" && grep -q "^<svg" "$T/p.svg"
