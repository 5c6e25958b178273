# SPDX-License-Identifier: Apache-2.0
printf '%s\n' '{"stream": "vit", "method": "sglang", "requests": 200, "images": 9, "patches": 99, "done": 200, "requests_per_s": 2, "p50_ms": 1, "p99_ms": 2}' >"$T/p.jsonl" &&
fails 1 "$T/err" vit bench --config qwen2.5-vl-tiny --stream 100000 --peer "$T/p.jsonl" &&
grep -q "the stream peer (sglang) replayed another request list: 200 requests, 9 images, 99 patches; this one has 100000" "$T/err"
