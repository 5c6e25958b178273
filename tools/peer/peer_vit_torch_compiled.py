# SPDX-License-Identifier: Apache-2.0
"""Stronger peer: what a competent PyTorch user would do for the Qwen2.5-VL-7B vision tower.
- intermediate size zero-padded 3420 -> 3456 (exact), so cuBLAS can pick Hopper kernels;
- blocks+merger compiled with torch.compile (Inductor fuses the elementwise work);
- the compiled function captured in one CUDA graph (SGLang's method on top).
Prints JSON lines: side, S, compiled_graph_ms, padded_graph_ms (no compile), rel errors."""
import json, os, sys, statistics, torch
import torch.nn.functional as F
from transformers.models.qwen2_5_vl.configuration_qwen2_5_vl import Qwen2_5_VLVisionConfig
from transformers.models.qwen2_5_vl import modeling_qwen2_5_vl as m

torch.manual_seed(0)
dev, DT = "cuda", torch.bfloat16
MODE = os.environ.get("PEER_COMPILE_MODE", "default")
cfg = Qwen2_5_VLVisionConfig(depth=32, hidden_size=1280, intermediate_size=3420, num_heads=16,
        out_hidden_size=3584, fullatt_block_indexes=[7, 15, 23, 31], window_size=112, patch_size=14,
        spatial_merge_size=2, temporal_patch_size=2, in_channels=3, hidden_act="silu")
cfg._attn_implementation = "sdpa"
model = m.Qwen2_5_VisionTransformerPretrainedModel._from_config(cfg, torch_dtype=DT).to(dev).eval()
for p in model.parameters():
    torch.nn.init.normal_(p, std=0.02)
H, D = cfg.num_heads, cfg.hidden_size // cfg.num_heads
I, IP = 3420, 3456

# padded MLP weights, exact: silu(0) * 0 = 0 and zero columns of down_proj
pad = []
with torch.no_grad():
    for blk in model.blocks:
        g, u, d = blk.mlp.gate_proj, blk.mlp.up_proj, blk.mlp.down_proj
        gw = torch.zeros(IP, 1280, device=dev, dtype=DT); gw[:I] = g.weight
        uw = torch.zeros(IP, 1280, device=dev, dtype=DT); uw[:I] = u.weight
        gb = torch.zeros(IP, device=dev, dtype=DT); gb[:I] = g.bias
        ub = torch.zeros(IP, device=dev, dtype=DT); ub[:I] = u.bias
        gu_w = torch.cat([gw, uw], 0).contiguous(); gu_b = torch.cat([gb, ub], 0).contiguous()
        dw = torch.zeros(1280, IP, device=dev, dtype=DT); dw[:, :I] = d.weight
        pad.append((gu_w, gu_b, dw.contiguous(), d.bias))

def timeit(fn, iters=50, warm=5):
    for _ in range(warm): fn()
    torch.cuda.synchronize(); ts = []
    for _ in range(iters):
        s = torch.cuda.Event(enable_timing=True); e = torch.cuda.Event(enable_timing=True)
        s.record(); fn(); e.record(); torch.cuda.synchronize(); ts.append(s.elapsed_time(e))
    return statistics.median(ts)

def blocks_merger_padded(x, cos, sin, win: int):
    S = x.shape[0]
    for i, blk in enumerate(model.blocks):
        h = blk.norm1(x)
        q, k, v = blk.attn.qkv(h).reshape(S, 3, H, D).permute(1, 0, 2, 3).unbind(0)
        q, k = m.apply_rotary_pos_emb_vision(q, k, cos, sin)
        L = S if i in cfg.fullatt_block_indexes else win
        q, k, v = (t.reshape(S // L, L, H, D).transpose(1, 2) for t in (q, k, v))
        o = F.scaled_dot_product_attention(q, k, v).transpose(1, 2).reshape(S, H * D)
        x = x + blk.attn.proj(o)
        gu_w, gu_b, dw, db = pad[i]
        gu = F.linear(blk.norm2(x), gu_w, gu_b)
        x = x + F.linear(F.silu(gu[:, :IP]) * gu[:, IP:], dw, db)
    return model.merger(x)

def graphed(fn, *args):
    st = args[0].clone()
    s = torch.cuda.Stream(); s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3): fn(st, *args[1:])
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        out = fn(st, *args[1:])
    def replay():
        st.copy_(args[0]); g.replay()
    return replay, out

compiled = torch.compile(blocks_merger_padded, dynamic=False, fullgraph=True,
                         mode=None if MODE == "default" else MODE)
with torch.inference_mode():
    for side in [int(a) for a in (sys.argv[1:] or ["224", "448", "896"])]:
        gh = gw = side // 14; S = gh * gw
        grid = torch.tensor([[1, gh, gw]], device=dev)
        pix = torch.randn(S, 3 * 2 * 14 * 14, device=dev, dtype=DT)
        ref = model(pix, grid_thw=grid).pooler_output.float()
        position_ids = m.get_vision_position_ids(grid, cfg.spatial_merge_size, kwargs={}) if hasattr(m, "get_vision_position_ids") else None
        window_index, cu_w = m.get_vision_window_index(grid, spatial_merge_size=2, window_size=112, patch_size=14, kwargs={})
        hs = model.patch_embed(pix)
        hs = model.permute_input_for_window_attn(hs, window_index, seq_len=S)
        pe = model.rotary_pos_emb(hs, position_ids)
        cos, sin = (model.permute_input_for_window_attn(f, window_index, seq_len=S) for f in pe)
        win = int((cu_w[1] - cu_w[0]).item()); rev = torch.argsort(window_index)
        rp, out_p = graphed(blocks_merger_padded, hs, cos, sin, win)
        padded_ms = timeit(rp)
        rc, out_c = graphed(compiled, hs, cos, sin, win)
        comp_ms = timeit(rc)
        e_p = ((out_p[rev].float() - ref).abs().max() / ref.abs().max()).item()
        e_c = ((out_c[rev].float() - ref).abs().max() / ref.abs().max()).item()
        print(json.dumps(dict(side=side, S=S, compile_mode=MODE, padded_graph_ms=round(padded_ms, 3),
                              compiled_graph_ms=round(comp_ms, 3), padded_rel_err=float(f"{e_p:.3g}"),
                              compiled_rel_err=float(f"{e_c:.3g}"))), flush=True)
