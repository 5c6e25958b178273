# SPDX-License-Identifier: Apache-2.0
command -v script >/dev/null || exit 77
script -qec "\"$VG\" vit bench --config qwen2.5-vl-tiny --dtype f32 --stream 3 --sides 56,112" /dev/null \
    >"$T/tty" </dev/null && grep -q "warm-up: capturing the requests' buckets, bucket 0/[1-4], [0-9.]* s" "$T/tty" &&
grep -q "warm-up: captured [0-9]* tokens, bucket \([1-4]\)/\1, " "$T/tty"
