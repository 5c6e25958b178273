# SPDX-License-Identifier: Apache-2.0
fails 1 "$T/err" lm bench --config qwen2-tiny --dtype f32 --batch 1 --prompt 8 --new 100000 \
    --peer "$T/absent.jsonl" && grep -q "cannot read the peer file $T/absent.jsonl" "$T/err"
