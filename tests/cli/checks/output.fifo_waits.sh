# SPDX-License-Identifier: Apache-2.0
mkfifo "$T/fifo" || exit 1
"$VG" vit encode --model "$FIX/model" --input "$FIX/two_images.input.safetensors" --output "$T/fifo" 2>"$T/err" &
vg=$!
i=0; while ! grep -q "waiting for a reader of the FIFO $T/fifo" "$T/err" && [ $i -lt 300 ]; do sleep 0.1; i=$((i+1)); done
cat "$T/fifo" >"$T/got.safetensors"; wait $vg; rc=$?; cat "$T/err"
test $rc -eq 0 && grep -q "waiting for a reader" "$T/err" &&
encode --output "$T/check.safetensors" --expected "$T/got.safetensors" --tolerance 0
