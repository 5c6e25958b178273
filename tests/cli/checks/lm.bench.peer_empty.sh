# SPDX-License-Identifier: Apache-2.0
printf '\n' >"$T/peer.jsonl" &&
fails 1 "$T/err" lm bench --config qwen2-tiny --dtype f32 --batch 1 --prompt 8 --new 100000 \
    --peer "$T/peer.jsonl" && grep -q "holds no measurements" "$T/err"
