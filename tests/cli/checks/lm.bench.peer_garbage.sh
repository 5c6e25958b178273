# SPDX-License-Identifier: Apache-2.0
printf '{"B": 1, "eager_ms_per_step": 15, "static_compiled_ms_per_step": 2.8}\n[1, 2]\n' >"$T/peer.jsonl" &&
fails 1 "$T/err" lm bench --config qwen2-tiny --dtype f32 --batch 1 --prompt 8 --new 100000 \
    --peer "$T/peer.jsonl" && grep -q "peer.jsonl:2: not a line of the peer's output" "$T/err"
