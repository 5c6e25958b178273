# SPDX-License-Identifier: Apache-2.0
mkdir -p "$T/m" && ln -s "$FIX/model/config.json" "$T/m/" &&
st_patch "$FIX/model/model.safetensors" "$T/m/model.safetensors" visual.merger.ln_q.weight 3e38 &&
fails 1 "$T/err" vit encode --model "$T/m" --input "$FIX/two_images.input.safetensors" --output "$T/o.safetensors" >"$T/out" &&
grep -q "embeddings\[[0-9]*, [0-9]*\] is .* from finite pixel values" "$T/err" && test ! -e "$T/o.safetensors" &&
! grep -q "mean nan" "$T/out" &&
st_patch "$FIX/two_images.input.safetensors" "$T/nan.safetensors" pixel_values nan &&
fails 1 "$T/err" vit encode --model "$FIX/model" --input "$T/nan.safetensors" --output "$T/o.safetensors" &&
grep -q "pixel_values\[0, 0\] is nan: the input must be finite" "$T/err"
