# SPDX-License-Identifier: Apache-2.0
p() { printf '%s\n' "$1" >"$T/p.jsonl"; fails 1 "$T/err" vit bench --config qwen2.5-vl-tiny --sizes 896 \
      --iters 100000 --peer "$T/p.jsonl" && grep -q "$2" "$T/err"; }
p '{"S": 16, "compiled_graph_ms": -1, "padded_graph_ms": 2}' 'p.jsonl:1: "compiled_graph_ms" must be a positive number' &&
p '{"S": 16.5, "torch_blocks_graph_ms": 2}' 'p.jsonl:1: "S" must be a whole number >= 1' &&
p '{"S": 16, "hf_eager_ms": 2}' 'p.jsonl:1: cannot tell which peer wrote this line' &&
p '{"side": 224, "S": 100, "torch_blocks_graph_ms": 2}' 'p.jsonl:1: side 224 and S 100 do not fit a Qwen2.5-VL peer (patches of 14 pixels)' &&
p '{"side": 224, "S": 256, "compile_mode": "default"}' 'p.jsonl:1: a peer line without any measurement' &&
p '[1, 2]' "p.jsonl:1: not a line of a peer's output" &&
p '{"hf_eager_ms": 2}' 'neither "S" (a size peer) nor "method" (the stream peer)' &&
p '{"stream": "vit", "method": "sglang", "requests": 6, "images": 10, "patches": 200, "done": 6, "requests_per_s": 2}' \
  'a stream peer line needs requests_per_s, p50_ms and p99_ms' &&
p '{"method": "sglang", "requests": 6, "images": 10, "patches": 200, "done": 7, "requests_per_s": 2, "p50_ms": 1, "p99_ms": 2}' \
  '"done" 7 is more than "requests" 6' &&
p '{"method": "sglang_with_a_very_long_name_beyond", "requests": 6, "images": 10, "patches": 200, "done": 6, "requests_per_s": 2, "p50_ms": 1, "p99_ms": 2}' \
  'stream method name longer than 31 characters' &&
p '{"S": 16, "torch_blocks_graph_ms": 2} {"S": 64}' "p.jsonl:1: not a line of a peer's output" &&
printf '' >"$T/empty.jsonl" && fails 1 "$T/err" vit bench --config qwen2.5-vl-tiny --peer "$T/empty.jsonl" &&
grep -q "the peer file $T/empty.jsonl holds no measurements" "$T/err" &&
fails 2 "$T/err" vit bench $(for i in 1 2 3 4 5 6 7 8 9; do printf -- '--peer %s ' "$T/p.jsonl"; done) &&
grep -q "peer may be given at most 8 times" "$T/err"
