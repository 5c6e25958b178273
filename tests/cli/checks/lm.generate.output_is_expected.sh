# SPDX-License-Identifier: Apache-2.0
cp "$LM/prompts.expected.safetensors" "$T/ref" && ln "$T/ref" "$T/hard" && ln -s ref "$T/soft" &&
for o in "$T/ref" "$T/hard" "$T/soft"; do
  fails 2 "$T/err" lm generate --model "$LM/model" --input "$LM/prompts.input.safetensors" --output "$o" \
      --expected "$T/ref" && grep -q "output $o is the same file as --expected $T/ref" "$T/err" || exit 1
done
cmp "$T/ref" "$LM/prompts.expected.safetensors" &&
cp "$LM/prompts.input.safetensors" "$T/in" && ln -s in "$T/in_link" &&
fails 2 "$T/err" lm generate --model "$LM/model" --input "$T/in" --output "$T/in_link" &&
grep -q "is the same file as --input" "$T/err" && cmp "$T/in" "$LM/prompts.input.safetensors"
