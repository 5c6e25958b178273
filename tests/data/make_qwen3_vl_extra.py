# SPDX-License-Identifier: Apache-2.0
"""Extra Qwen3-VL vision fixtures from Hugging Face transformers (the reference), beside the shared
qwen3_vl_tiny ones: shapes those do not exercise. Runs on a CPU with PyTorch and transformers
(pip install torch transformers safetensors):

    python3 tests/data/make_qwen3_vl_extra.py tests/data

writes
  qwen3_vl_tiny/wide_image.*   the tiny fixture's model (its weights read back from
                               qwen3_vl_tiny/model) on a (1, 8, 32) image: as many patches as
                               one_image's (1, 16, 16), another shape
  qwen3_vl_odd/                depth 3, hidden 96, 2 heads (head_dim 48), intermediate 100
                               (not a multiple of 16), out 40, patch 8, a 7 x 7 position table
                               resampled down and up, deepstack after blocks 2 and 0 (unsorted,
                               block 0 included), names visual.*
  qwen3_vl_hd128/              depth 2, hidden 128, 1 head (head_dim 128), intermediate 64, out 32,
                               patch 8, a 2 x 2 position table, deepstack after the last block,
                               erf GELU, rope_theta 500 (rope_parameters)
Each case: CASE.input.safetensors (pixel_values, grid_thw) and CASE.expected.safetensors
(embeddings, deepstack.K, last_hidden_state), F32, eager attention, fixed seeds."""
import json, os, sys

import torch
from safetensors.torch import load_file, save_file
from transformers.models.qwen3_vl import modeling_qwen3_vl as q3
from transformers.models.qwen3_vl.configuration_qwen3_vl import Qwen3VLVisionConfig

OUT = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))


def build(vision):
    cfg = Qwen3VLVisionConfig(**vision)
    cfg._attn_implementation = "eager"
    return q3.Qwen3VLVisionModel._from_config(cfg, dtype=torch.float32).eval(), cfg


def randomise(model, seed):
    """LayerNorm weights near 1, small biases, weights scaled by fan-in: values of a trained
    model's magnitude, so that every part of the tower matters in the outputs."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "norm" in name and name.endswith(".weight"):
                p.copy_(1.0 + 0.1 * torch.randn(p.shape, generator=g))
            elif name.endswith(".bias"):
                p.copy_(0.05 * torch.randn(p.shape, generator=g))
            else:
                fan_in = p[0].numel() if p.dim() > 1 else p.numel()
                p.copy_(torch.randn(p.shape, generator=g) / fan_in ** 0.5)


def write_model(model, vision, prefix, path):
    os.makedirs(path, exist_ok=True)
    tensors = {prefix + k: v.detach().contiguous() for k, v in model.state_dict().items()}
    save_file(tensors, os.path.join(path, "model.safetensors"), metadata={"format": "pt"})
    config = {"architectures": ["Qwen3VLForConditionalGeneration"], "model_type": "qwen3_vl",
              "vision_config": dict(vision, model_type="qwen3_vl"), "torch_dtype": "float32"}
    with open(os.path.join(path, "config.json"), "w") as f:
        json.dump(config, f, indent=2)


def write_case(model, cfg, folder, name, grids, seed):
    g = torch.Generator().manual_seed(seed)
    grid = torch.tensor(grids, dtype=torch.int64)
    patches = int(grid.prod(-1).sum())
    width = cfg.in_channels * cfg.temporal_patch_size * cfg.patch_size ** 2
    pixels = torch.randn(patches, width, generator=g)
    with torch.no_grad():
        out = model(pixels, grid_thw=grid)
    expected = {"embeddings": out.pooler_output, "last_hidden_state": out.last_hidden_state}
    for k, t in enumerate(out.deepstack_features):
        expected[f"deepstack.{k}"] = t
    save_file({"pixel_values": pixels, "grid_thw": grid}, os.path.join(folder, f"{name}.input.safetensors"))
    save_file({k: v.float().contiguous() for k, v in expected.items()},
              os.path.join(folder, f"{name}.expected.safetensors"))
    print(folder, name, patches, {k: tuple(v.shape) for k, v in expected.items()}, flush=True)


def tiny_wide_image():
    folder = os.path.join(OUT, "qwen3_vl_tiny")
    with open(os.path.join(folder, "model", "config.json")) as f:
        vision = json.load(f)["vision_config"]
    vision.pop("model_type", None)
    model, cfg = build(vision)
    weights = load_file(os.path.join(folder, "model", "model.safetensors"))
    prefix = "model.visual."
    model.load_state_dict({k[len(prefix):]: v for k, v in weights.items() if k.startswith(prefix)})
    write_case(model, cfg, folder, "wide_image", [[1, 8, 32]], 4242)


def odd():
    vision = dict(depth=3, hidden_size=96, intermediate_size=100, num_heads=2, out_hidden_size=40,
                  patch_size=8, spatial_merge_size=2, temporal_patch_size=2, in_channels=3,
                  hidden_act="gelu_pytorch_tanh", num_position_embeddings=49,
                  deepstack_visual_indexes=[2, 0])
    model, cfg = build(vision)
    randomise(model, 31)
    folder = os.path.join(OUT, "qwen3_vl_odd")
    write_model(model, vision, "visual.", os.path.join(folder, "model"))
    write_case(model, cfg, folder, "up_and_down", [[1, 4, 6], [1, 14, 10]], 32)
    write_case(model, cfg, folder, "video", [[2, 6, 8]], 33)


def hd128():
    vision = dict(depth=2, hidden_size=128, intermediate_size=64, num_heads=1, out_hidden_size=32,
                  patch_size=8, spatial_merge_size=2, temporal_patch_size=2, in_channels=3,
                  hidden_act="gelu", num_position_embeddings=4, deepstack_visual_indexes=[1],
                  rope_parameters={"rope_type": "axial", "rope_theta": 500.0})
    model, cfg = build(vision)
    randomise(model, 41)
    folder = os.path.join(OUT, "qwen3_vl_hd128")
    write_model(model, vision, "model.visual.", os.path.join(folder, "model"))
    write_case(model, cfg, folder, "two_images", [[1, 6, 6], [1, 2, 10]], 42)


if __name__ == "__main__":
    torch.set_num_threads(1)  # reproducible sums
    tiny_wide_image()
    odd()
    hd128()
