# SPDX-License-Identifier: Apache-2.0
"""Device memory PyTorch's CUDA graphs hold for the Qwen2.5-VL-7B vision blocks: one graph per
bucket, 16 buckets of 64..1024 patches, each captured with torch's default private memory pool
(as a per-bucket graph runner does). Prints one JSON line. Needs torch and transformers (the GPU
machine). The forward is written to be capturable: window attention as fixed 64-token windows,
which is what a 896-pixel-wide grid gives; memory, not numerics, is what this measures."""
import json
import torch
import torch.nn.functional as F
from transformers.models.qwen2_5_vl import modeling_qwen2_5_vl as qv
from transformers.models.qwen2_5_vl.configuration_qwen2_5_vl import Qwen2_5_VLVisionConfig

cfg = Qwen2_5_VLVisionConfig(depth=32, hidden_size=1280, intermediate_size=3420, num_heads=16,
                             out_hidden_size=3584, fullatt_block_indexes=[7, 15, 23, 31])
cfg._attn_implementation = "sdpa"
tower = qv.Qwen2_5_VisionTransformerPretrainedModel._from_config(cfg, torch_dtype=torch.bfloat16)
tower = tower.cuda().eval()
heads, dim = cfg.num_heads, cfg.hidden_size // cfg.num_heads


def blocks(x):
    n = x.shape[0]
    for i, blk in enumerate(tower.blocks):
        q, k, v = blk.attn.qkv(blk.norm1(x)).view(n, 3, heads, dim).unbind(1)
        span = n if i in cfg.fullatt_block_indexes else 64
        q, k, v = (t.view(n // span, span, heads, dim).transpose(1, 2) for t in (q, k, v))
        o = F.scaled_dot_product_attention(q, k, v).transpose(1, 2).reshape(n, heads * dim)
        x = x + blk.attn.proj(o)
        x = x + blk.mlp(blk.norm2(x))
    return tower.merger(x)


graphs, before = [], None
with torch.inference_mode():
    for n in range(64, 1025, 64):
        x = torch.randn(n, cfg.hidden_size, device="cuda", dtype=torch.bfloat16)
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            blocks(x)  # warm-up outside the graph, as required before capture
        torch.cuda.current_stream().wait_stream(side)
        torch.cuda.synchronize()
        if before is None:
            before = torch.cuda.memory_reserved()
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            out = blocks(x)
        graphs.append((g, x, out))
    torch.cuda.synchronize()
    after = torch.cuda.memory_reserved()
print(json.dumps({"graphs": len(graphs), "private_pools_mib": round((after - before) / 2**20, 1),
                  "per_graph_mib": round((after - before) / 2**20 / len(graphs), 1)}))
