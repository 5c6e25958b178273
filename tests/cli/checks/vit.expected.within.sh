# SPDX-License-Identifier: Apache-2.0
encode --output "$T/o.safetensors" --expected "$FIX/two_images.expected.safetensors" >"$T/out" &&
cat "$T/out" && grep -q "max relative error .*, tolerance 0.0001: within tolerance" "$T/out"
