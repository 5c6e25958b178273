# SPDX-License-Identifier: Apache-2.0
echo old >"$T/target.safetensors" && ln -s target.safetensors "$T/link.safetensors" &&
encode --output "$T/link.safetensors" && test -L "$T/link.safetensors" &&
encode --output "$T/check.safetensors" --expected "$T/target.safetensors"
