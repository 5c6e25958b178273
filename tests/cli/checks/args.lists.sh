# SPDX-License-Identifier: Apache-2.0
u() { fails 2 "$T/err" "$@"; }
gen() { u lm generate --model /nonexistent --max-new-tokens 1 "$@"; }
enc() { u vit encode --model /nonexistent --input "$T/none" --output "$T/o" "$@"; }
enc --capture-sizes 8,4 && grep -q "capture-sizes wants .* ascending order.*got '8,4': 4 is not above 8" "$T/err" &&
enc --capture-sizes 4,4 && grep -q "got '4,4': 4 is not above 4" "$T/err" &&
gen --prompt-ids 1 --capture-sizes 8,4 && grep -q "got '8,4': 4 is not above 8" "$T/err" &&
gen --prompt-ids 1 --capture-sizes 0,4 && grep -q "got '0,4': 0 is not in \[1, 2147483647\]" "$T/err" &&
gen --prompt-ids 1,2,3, && grep -q "got '1,2,3,': prompt 1: item 4 is empty" "$T/err" &&
gen --prompt-ids '1;' && grep -q "got '1;': prompt 2: item 1 is empty" "$T/err" &&
gen --prompt-ids '1,,2' && grep -q "prompt 1: item 2 is empty" "$T/err" &&
gen --prompt-ids ';1' && grep -q "prompt 1: item 1 is empty" "$T/err" &&
gen --prompt-ids ' 1' && grep -q "prompt 1: ' 1' is not an integer" "$T/err" &&
gen --prompt-ids '1,-2' && grep -q "prompt 1: '-2' is not an integer" "$T/err" &&
u lm bench --config qwen2-tiny --batch 1,2, && grep -q "got '1,2,': item 3 is empty" "$T/err" &&
u vit bench --config qwen2.5-vl-tiny --sizes 56, && grep -q "sizes wants .* got '56,'" "$T/err" &&
u vit bench --stream 3 --capture-sizes 64,,128 && grep -q "got '64,,128': item 2 is empty" "$T/err" &&
# well-formed lists pass: the missing model is what fails
fails 1 "$T/err" lm generate --model /nonexistent --max-new-tokens 1 --prompt-ids '1,2;3' --capture-sizes 1,2,4
