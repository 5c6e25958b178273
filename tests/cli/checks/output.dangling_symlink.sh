# SPDX-License-Identifier: Apache-2.0
ln -s new.safetensors "$T/link.safetensors" && encode --output "$T/link.safetensors" &&
test -L "$T/link.safetensors" && test -f "$T/new.safetensors"
