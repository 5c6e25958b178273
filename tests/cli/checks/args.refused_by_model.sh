# SPDX-License-Identifier: Apache-2.0
# Values the parser passes but the model refuses are still a wrong command line (exit 2, not 1):
# capture sizes that are not whole merge units of the tower, a synthetic tower no one knows.
fails 2 "$T/err" vit encode --model "$FIX/model" --input "$FIX/one_image.input.safetensors" --output "$T/o" \
    --capture-sizes 4,6 && grep -q "capture size 6 is not a multiple of spatial_merge_size^2 = 4" "$T/err" &&
test ! -e "$T/o" &&
fails 2 "$T/err" vit bench --config no-such-tower --sizes 56 --iters 1 &&
grep -q "no synthetic configuration 'no-such-tower'" "$T/err" &&
# a model that is not there stays a failed input (exit 1)
fails 1 "$T/err" vit encode --model "$T/none" --input "$FIX/one_image.input.safetensors" --output "$T/o"
