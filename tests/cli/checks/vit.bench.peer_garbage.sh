# SPDX-License-Identifier: Apache-2.0
printf '{"S": 16, "hf_eager_ms": 1, "torch_blocks_graph_ms": 0.5}\nthis is not json\n' >"$T/peer.jsonl" &&
fails 1 "$T/err" vit bench --config qwen2.5-vl-tiny --sizes 896 --iters 100000 \
    --peer "$T/peer.jsonl" && grep -q "peer.jsonl:2: not a line of a peer's output" "$T/err"
