# SPDX-License-Identifier: Apache-2.0
for n in 0 -5; do
  st_write "$T/in" 'input_ids I64 1,2' 'prompt_lens I64 2' "max_new_tokens I64 $n" &&
  fails 1 "$T/err" lm generate --model "$LM/model" --input "$T/in" &&
  grep -q "max_new_tokens is $n; it must be at least 1" "$T/err" || exit 1
done
st_write "$T/in" 'input_ids I64 1,2,-3' 'prompt_lens I64 3' 'max_new_tokens I64 2' &&
fails 1 "$T/err" lm generate --model "$LM/model" --input "$T/in" &&
grep -q "input_ids\[2\] = -3 is outside the vocabulary \[0, 512)" "$T/err" &&
fails 2 "$T/err" lm generate --model "$LM/model" --prompt-ids '1,2,3,' --max-new-tokens 2 &&
fails 2 "$T/err" lm generate --model "$LM/model" --prompt-ids '1;' --max-new-tokens 2
