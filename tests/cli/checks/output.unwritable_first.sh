# SPDX-License-Identifier: Apache-2.0
for o in '' /proc/version /proc/self/fd/999 /proc/new.safetensors; do
  fails 1 "$T/err" vit encode --model "$FIX/model" --input "$FIX/two_images.input.safetensors" --repeat 1000000 \
      --output "$o" && grep -q "cannot write" "$T/err" || exit 1
done
mkdir "$T/gone" && cd "$T/gone" && rmdir "$T/gone" &&
fails 1 "$T/err" vit encode --model "$FIX/model" --input "$FIX/two_images.input.safetensors" --repeat 1000000 \
    --output o.safetensors && grep -q "cannot write o.safetensors: cannot create a file in ." "$T/err" && cd / &&
fails 1 "$T/err" lm generate --model "$LM/model" --prompt-ids 1 --max-new-tokens 2 --output '' &&
grep -q "cannot write '': the name is empty" "$T/err"
