# SPDX-License-Identifier: Apache-2.0
command -v script >/dev/null || exit 77
script -qec "\"$VG\" vit bench --config qwen2.5-vl-tiny --dtype f32 --sizes 56 --iters 2 --quiet" \
    /dev/null >"$T/tty" </dev/null && grep -q "16-bucket warm-up" "$T/tty" && ! grep -q "call 5/5" "$T/tty"
