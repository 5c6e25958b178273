# SPDX-License-Identifier: Apache-2.0
fails 1 "$T/err" vit bench --config qwen2.5-vl-tiny --sizes 896 --iters 100000 \
    --peer "$T/absent.jsonl" && grep -q "cannot read the peer file $T/absent.jsonl" "$T/err"
