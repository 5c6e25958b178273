# SPDX-License-Identifier: Apache-2.0
for n in 0 -1; do
  st_write "$T/in" 'input_ids I64 1,2' "prompt_lens I64 2,$n" 'max_new_tokens I64 2' &&
  fails 1 "$T/err" lm generate --model "$LM/model" --input "$T/in" &&
  grep -q "prompt_lens\[1\] is $n; every prompt needs at least 1 token" "$T/err" || exit 1
done
