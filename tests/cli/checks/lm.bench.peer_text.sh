# SPDX-License-Identifier: Apache-2.0
printf '{"B": 1, "prompt": 64, "new": 2, "eager_ms_per_step": 15.5, "static_compiled_ms_per_step": 2.5}\n' >"$T/peer.jsonl" &&
"$VG" lm bench --config qwen2-tiny --dtype f32 --batch 1,2 --prompt 8 --new 2 --peer "$T/peer.jsonl" \
    >"$T/out" 2>"$T/err" && cat "$T/out" "$T/err" &&
grep -q "beside the peer" "$T/out" && grep -Eq "^ +1 +[0-9.]+ +2\.500 +[0-9.]+x +15\.500 +[0-9.]+x$" "$T/out" &&
grep -Eq "^ +2 +[0-9.]+ +- +- +- +-$" "$T/out" &&
grep -q "the peer measured batch 1 with a prompt of 64 tokens, this run 8" "$T/err"
