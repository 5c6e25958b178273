# SPDX-License-Identifier: Apache-2.0
peers "$T/peers.jsonl" &&
fails 1 "$T/err" vit bench --config qwen2.5-vl-tiny --stream 100000 --peer "$T/peers.jsonl" &&
grep -q "the peer files hold no stream measurements (lines of tools/peer/peer_vit_stream_torch.py)" "$T/err" &&
printf '%s\n' '{"stream": "vit", "method": "sglang", "requests": 2, "images": 2, "patches": 2, "done": 2, "requests_per_s": 2, "p50_ms": 1, "p99_ms": 2}' >"$T/s.jsonl" &&
fails 1 "$T/err" vit bench --config qwen2.5-vl-tiny --sizes 896 --iters 100000 --peer "$T/s.jsonl" &&
grep -q "the peer files hold no per-size measurements" "$T/err"
