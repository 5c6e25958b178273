# SPDX-License-Identifier: Apache-2.0
command -v script >/dev/null || exit 77
script -qec "\"$VG\" vit bench --config qwen2.5-vl-tiny --dtype f32 --sizes 56 --iters 2" /dev/null \
    >"$T/tty" </dev/null && grep -q "graph, 16 patches (size 1/1), call 5/5, [0-9.]* s" "$T/tty" &&
grep -q "warm-up: captured 64 tokens, bucket 16/16" "$T/tty"
