# SPDX-License-Identifier: Apache-2.0
"""Qwen3-VL-8B vision tower peer (synthetic bf16): HF eager; blocks + merger + deepstack mergers
in one CUDA graph (SGLang's method, SDPA); the same under torch.compile. JSON lines."""
import inspect, json, statistics, sys, torch
import torch.nn.functional as F
from transformers.models.qwen3_vl.configuration_qwen3_vl import Qwen3VLVisionConfig
from transformers.models.qwen3_vl import modeling_qwen3_vl as q3

dev, DT = "cuda", torch.bfloat16
torch.manual_seed(0)
cfg = Qwen3VLVisionConfig(depth=27, hidden_size=1152, intermediate_size=4304, num_heads=16,
                          out_hidden_size=4096, patch_size=16, spatial_merge_size=2, temporal_patch_size=2,
                          in_channels=3, hidden_act="gelu_pytorch_tanh", num_position_embeddings=2304,
                          deepstack_visual_indexes=[8, 16, 24])
cfg._attn_implementation = "sdpa"
model = q3.Qwen3VLVisionModel._from_config(cfg, dtype=DT).to(dev).eval()
for p in model.parameters():
    torch.nn.init.normal_(p, std=0.02)
H, D = cfg.num_heads, cfg.hidden_size // cfg.num_heads
ds_idx = list(cfg.deepstack_visual_indexes)

def timeit(fn, iters=30, warm=5):
    for _ in range(warm): fn()
    torch.cuda.synchronize(); ts = []
    for _ in range(iters):
        s = torch.cuda.Event(enable_timing=True); e = torch.cuda.Event(enable_timing=True)
        s.record(); fn(); e.record(); torch.cuda.synchronize(); ts.append(s.elapsed_time(e))
    return statistics.median(ts)

def blocks(x, cos, sin):
    S = x.shape[0]; outs = []
    for i, blk in enumerate(model.blocks):
        h = blk.norm1(x)
        q, k, v = blk.attn.qkv(h).reshape(S, 3, H, D).permute(1, 0, 2, 3).unbind(0)
        q, k = q3.apply_rotary_pos_emb_vision(q, k, cos, sin)
        o = F.scaled_dot_product_attention(q.transpose(0, 1)[None], k.transpose(0, 1)[None], v.transpose(0, 1)[None])
        x = x + blk.attn.proj(o[0].transpose(0, 1).reshape(S, H * D))
        x = x + blk.mlp(blk.norm2(x))
        if i in ds_idx:
            outs.append(model.deepstack_merger_list[ds_idx.index(i)](x))
    return torch.cat([model.merger(x)] + outs, dim=1)

def graphed(fn, x, *rest):
    st = x.clone(); s = torch.cuda.Stream(); s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3): fn(st, *rest)
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g): out = fn(st, *rest)
    def replay(): st.copy_(x); g.replay()
    return replay, out

compiled = torch.compile(blocks, dynamic=False, fullgraph=True)
with torch.inference_mode():
    for side in [int(a) for a in (sys.argv[1:] or ["256", "512", "1024"])]:
        gh = gw = side // 16; S = gh * gw
        grid = torch.tensor([[1, gh, gw]], device=dev)
        pix = torch.randn(S, 3 * 2 * 16 * 16, device=dev, dtype=DT)
        row = dict(side=side, S=S)
        try:
            row["hf_eager_ms"] = round(timeit(lambda: model(pix, grid_thw=grid)), 3)
            ref = model(pix, grid_thw=grid)
            grab = {}
            def pre(mod, args, kwargs):
                grab["x"] = (args[0] if args else kwargs["hidden_states"]).clone()
                grab["pe"] = kwargs["position_embeddings"]
            hk = model.blocks[0].register_forward_pre_hook(pre, with_kwargs=True)
            model(pix, grid_thw=grid); hk.remove()
            x = grab["x"]; cos, sin = grab["pe"]
            r1, o1 = graphed(blocks, x, cos, sin)
            row["torch_graph_ms"] = round(timeit(r1, iters=50), 3)
            r2, o2 = graphed(compiled, x, cos, sin)
            row["compiled_graph_ms"] = round(timeit(r2, iters=50), 3)
            main = ref.pooler_output if hasattr(ref, "pooler_output") else ref[0]
            m = main.float(); row["graph_rel_err"] = float(f"{((o1[:, :4096].float() - m).abs().max() / m.abs().max()).item():.3g}")
            row["compiled_rel_err"] = float(f"{((o2[:, :4096].float() - m).abs().max() / m.abs().max()).item():.3g}")
        except Exception as ex:
            row["error"] = repr(ex)[:400]
            print(inspect.getsource(q3.Qwen3VLVisionModel.forward)[:3000], file=sys.stderr)
        print(json.dumps(row), flush=True)
