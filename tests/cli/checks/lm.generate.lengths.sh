# SPDX-License-Identifier: Apache-2.0
fails 2 "$T/err" lm generate --model "$LM/model" --prompt-ids 1,2,3 --max-new-tokens 5000 &&
grep -q "prompt 0 has 3 tokens; with --max-new-tokens 5000 that makes 5003, more than the model's max_position_embeddings 4096: at most 4093 new tokens fit" "$T/err" &&
fails 2 "$T/err" lm generate --model "$LM/model" --prompt-ids 1,2,3 --max-new-tokens 1000000000 &&
grep -q "max-new-tokens 1000000000 that makes 1000000003" "$T/err" && ! grep -q "KV pool" "$T/err" &&
st_write "$T/big" 'input_ids I64 1,2' 'prompt_lens I64 2' 'max_new_tokens I64 9223372036854775807' &&
fails 1 "$T/err" lm generate --model "$LM/model" --input "$T/big" &&
grep -q "with max_new_tokens 9223372036854775807 of $T/big that makes" "$T/err" &&
fails 2 "$T/err" lm generate --model "$LM/model" --prompt-ids 1,2 --max-new-tokens 30 --block-size 4 --kv-blocks 3 &&
grep -q "need 8 KV blocks of 4 tokens; --kv-blocks gives 3" "$T/err" &&
fails 2 "$T/err" lm bench --config qwen2-tiny --batch 1 --prompt 5000 --new 4 &&
grep -q "prompt 5000 and --new 4 .* more than max_position_embeddings 4096" "$T/err" && ! grep -q max_seq_len "$T/err"
