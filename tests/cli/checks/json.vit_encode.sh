# SPDX-License-Identifier: Apache-2.0
command -v python3 >/dev/null || exit 77
encode --output "$T/o.safetensors" --repeat 2 --stats --json \
    --expected "$FIX/two_images.expected.safetensors" >"$T/j" &&
json_has "$T/j" 'd["stats"]["total"]["hits"] == 2 and d["expected"]["within_tolerance"] is True'
