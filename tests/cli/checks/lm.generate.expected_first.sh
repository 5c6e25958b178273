# SPDX-License-Identifier: Apache-2.0
for r in "$T/absent" "$LM/prompts.input.safetensors" "$LM/long.expected.safetensors"; do
  fails 1 "$T/err" lm generate --model "$LM/model" --input "$LM/prompts.input.safetensors" --expected "$r" \
      >"$T/out" && test ! -s "$T/out" || exit 1
done
grep -q "long.expected.safetensors: tensor 'sequence.1' is missing" "$T/err"
