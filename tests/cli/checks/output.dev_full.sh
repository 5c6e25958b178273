# SPDX-License-Identifier: Apache-2.0
fails 1 "$T/err" vit encode --model "$FIX/model" --input "$FIX/two_images.input.safetensors" \
    --output /dev/full && grep -q "cannot write /dev/full: No space left on device" "$T/err" &&
test -c /dev/full
