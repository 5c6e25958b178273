# SPDX-License-Identifier: Apache-2.0
mkfifo "$T/in.safetensors" &&
timeout 60 "$VG" vit encode --model "$V3/model" --input "$T/in.safetensors" --output "$T/o.safetensors" 2>"$T/err"
rc=$?; cat "$T/err"; test $rc -eq 1 && grep -q "in.safetensors: .*FIFO" "$T/err"
