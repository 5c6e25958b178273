# SPDX-License-Identifier: Apache-2.0
fails 2 "$T/err" vit bench --dtype f64 && grep -q "dtype wants bf16, f16 or f32, got 'f64'" "$T/err"
