# SPDX-License-Identifier: Apache-2.0
command -v script >/dev/null || exit 77
script -qec "\"$VG\" vit encode --model \"$FIX/model\" --input \"$FIX/two_images.input.safetensors\" --output \"$T/o.safetensors\" --warmup --capture-sizes 64,360,512" \
    /dev/null >"$T/tty" </dev/null && grep -q "warm-up: captured 360 tokens, bucket 1/1" "$T/tty" &&
! grep -q "captured 64 tokens\|captured 512 tokens" "$T/tty"
