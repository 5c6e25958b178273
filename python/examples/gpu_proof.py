# SPDX-License-Identifier: Apache-2.0
"""vgraph on a CUDA GPU with PyTorch and transformers (no network needed): the three proofs of
docs/python.md, with a summary at the end.

 (a) Hugging Face's Qwen2.5-VL model class, random weights, the tiny fixture's vision config (or
     VGRAPH_PROOF_VISION=3b|7b for those towers' shapes), its vision tower replaced by vg's
     encoder through vgraph: model.generate on an image + text prompt gives the same tokens as the
     unmodified model; the vision part's time before and after.
 (b) GraphWrapper around a PyTorch decoder step (the gpt-fast-style step of
     shared/tools/peer_lm_fast.py, small): equal to the eager step for batch sizes that hit, pad
     into and exceed the capture sizes; replay time against torch.cuda.graph of the same callable.
 (c) zero copy: the same data pointer from torch to vg and back.

usage: python3 python/examples/gpu_proof.py    (exit 0 when every proof holds)
"""
import json
import os
import statistics
import sys
import tempfile
import time

import torch
import torch.nn.functional as F

import vgraph

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
results = {}


def timed(fn, reps=20):
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    ts = []
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        ts.append((time.perf_counter() - t) * 1e3)
    return statistics.median(ts)


# ---- (a) Hugging Face Qwen2.5-VL with vg's vision tower ------------------------------------------

class VgVisual(torch.nn.Module):
    """Stands in for model.visual: same call, vg's encoder underneath (pixels read in place)."""

    def __init__(self, hf_visual, encoder, like):
        super().__init__()
        object.__setattr__(self, "_hf", hf_visual)  # not a submodule: only its attributes are read
        self.encoder = encoder
        self.like = like  # what HF's tower returned: a tensor or a ModelOutput with pooler_output
        self.calls = 0

    def __getattr__(self, name):  # spatial_merge_size, dtype, config, ...: the HF tower's
        try:
            return super().__getattr__(name)
        except AttributeError:
            return getattr(self.__dict__["_hf"], name)

    def forward(self, hidden_states, grid_thw=None, **kwargs):
        self.calls += 1
        out = self.encoder.encode(hidden_states.contiguous(), grid_thw)
        emb = out.embeddings.to(hidden_states.dtype)
        # as HF's tower answers: a tensor (transformers 4.x), or an output whose pooler_output is
        # the merged embeddings (5.x; get_image_features reads it, with return_dict=True or not)
        if isinstance(self.like, torch.Tensor) and not kwargs.get("return_dict"):
            return emb
        if isinstance(self.like, torch.Tensor):
            from transformers.modeling_outputs import BaseModelOutputWithPooling
            return BaseModelOutputWithPooling(last_hidden_state=emb, pooler_output=emb)
        return type(self.like)(last_hidden_state=emb, pooler_output=emb)


def proof_hf_qwen2_5_vl(rt):
    from transformers import Qwen2_5_VLConfig, Qwen2_5_VLForConditionalGeneration
    fixture = json.load(open(os.path.join(REPO, "tests/data/qwen2_5_vl_tiny/model/config.json")))
    vision = dict(fixture["vision_config"])
    which = os.environ.get("VGRAPH_PROOF_VISION", "tiny")
    if which in ("3b", "7b"):  # the real towers' shapes (synthetic weights)
        vision.update(depth=32, hidden_size=1280, num_heads=16, intermediate_size=3420,
                      out_hidden_size=2048 if which == "3b" else 3584, fullatt_block_indexes=[7, 15, 23, 31])
    text = dict(vocab_size=512, hidden_size=vision["out_hidden_size"], intermediate_size=128, num_hidden_layers=2,
                num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=4096, rope_theta=1e6)
    half = text["hidden_size"] // text["num_attention_heads"] // 2
    section = [half - 2 * (half // 3), half // 3, half // 3]  # mrope: sums to head_dim / 2
    text["rope_scaling"] = {"type": "mrope", "mrope_section": section}  # transformers 4.x
    text["rope_parameters"] = {"rope_type": "default", "mrope_section": section, "rope_theta": 1e6}  # 5.x
    ids = dict(image_token_id=500, video_token_id=501, vision_start_token_id=502, vision_end_token_id=503,
               bos_token_id=1, eos_token_id=2, pad_token_id=0)
    cfg = Qwen2_5_VLConfig(text_config=dict(text, **ids), vision_config=vision, **ids)
    cfg._attn_implementation = "eager"
    torch.manual_seed(0)
    model = Qwen2_5_VLForConditionalGeneration(cfg).to("cuda", torch.float32).eval()
    with torch.no_grad():
        for p in model.parameters():
            p.normal_(0, 0.05)
    core = model.model if hasattr(model.model, "visual") else model
    tmp = tempfile.mkdtemp(prefix="vgraph-proof-")
    model.save_pretrained(tmp, safe_serialization=True)  # the same weights for vg to load

    # an image of h x w patches, and a prompt: text, the image's placeholder tokens, text
    t_, h, w = 1, 16, 20
    patch_dim = vision["in_channels"] * vision["temporal_patch_size"] * vision["patch_size"] ** 2
    pixel_values = torch.randn(t_ * h * w, patch_dim, device="cuda")
    grid = torch.tensor([[t_, h, w]], device="cuda")
    n_img = t_ * h * w // vision["spatial_merge_size"] ** 2
    prompt = [1, 17, 42, 99] + [502] + [500] * n_img + [503] + [7, 8, 9]
    input_ids = torch.tensor([prompt], device="cuda")
    kw = dict(input_ids=input_ids, attention_mask=torch.ones_like(input_ids), pixel_values=pixel_values,
              image_grid_thw=grid, max_new_tokens=12, do_sample=False)
    with torch.no_grad():
        ref = model.generate(**kw)
        hf_visual = core.visual
        like = hf_visual(pixel_values, grid_thw=grid)
        t_hf = timed(lambda: hf_visual(pixel_values, grid_thw=grid))
        enc = vgraph.VisionEncoder(rt, tmp)
        core.visual = VgVisual(hf_visual, enc, like)
        out = model.generate(**kw)
        t_vg = timed(lambda: core.visual(pixel_values, grid_thw=grid))
        core.visual = hf_visual
    got, want = out[0, len(prompt):].tolist(), ref[0, len(prompt):].tolist()
    hf_emb = like if isinstance(like, torch.Tensor) else like.pooler_output
    vg_emb = enc.encode(pixel_values, grid).embeddings
    rel = ((vg_emb - hf_emb).abs().max() / hf_emb.abs().max()).item()
    results["a_hf_generate"] = dict(ok=got == want, vision=which, tokens_hf=want, tokens_vg=got,
                                    embeddings_rel_err=rel, vision_ms_hf=round(t_hf, 3),
                                    vision_ms_vg=round(t_vg, 3), speedup=round(t_hf / t_vg, 2))
    enc.close()


# ---- (b) GraphWrapper around a decoder step -------------------------------------------------------

def proof_graph_wrapper(rt):
    torch.manual_seed(0)
    dt, L, H, NH, KVH, D, I, V, MAXLEN, MAXB = torch.bfloat16, 4, 256, 4, 2, 64, 512, 1024, 256, 64
    rnd = lambda *s: torch.randn(*s, dtype=dt, device="cuda") * 0.02  # noqa: E731
    layers = [dict(ln1=torch.ones(H, dtype=dt, device="cuda"), ln2=torch.ones(H, dtype=dt, device="cuda"),
                   wqkv=rnd((NH + 2 * KVH) * D, H), bqkv=rnd((NH + 2 * KVH) * D), wo=rnd(H, NH * D),
                   wgu=rnd(2 * I, H), wd=rnd(H, I)) for _ in range(L)]
    emb, lnf = rnd(V, H), torch.ones(H, dtype=dt, device="cuda")
    inv = 1.0 / (1e6 ** (torch.arange(0, D, 2, device="cuda", dtype=torch.float32) / D))
    ang = torch.arange(MAXLEN, device="cuda", dtype=torch.float32)[:, None] * inv[None]
    COS, SIN = ang.cos(), ang.sin()
    kc = [torch.randn(MAXB, KVH, MAXLEN, D, dtype=dt, device="cuda") for _ in range(L)]
    vc = [torch.randn(MAXB, KVH, MAXLEN, D, dtype=dt, device="cuda") for _ in range(L)]

    def rms(x, w, eps=1e-6):
        x32 = x.float()
        return (x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + eps)).to(dt) * w

    def rope(x, cos, sin):
        x1, x2 = x[..., : D // 2].float(), x[..., D // 2:].float()
        return torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], -1).to(dt)

    def step(tok, pos):  # one decode step of B sequences (B = tokens): the peer's, caches global
        B = tok.shape[0]
        x = emb[tok]
        cos, sin = COS[pos][:, None, :], SIN[pos][:, None, :]
        mask = (torch.arange(MAXLEN, device="cuda")[None, :] <= pos[:, None])[:, None, None, :]
        rows = torch.arange(B, device="cuda")
        for l, w in enumerate(layers):
            h = rms(x, w["ln1"])
            q, k, v = F.linear(h, w["wqkv"], w["bqkv"]).split([NH * D, KVH * D, KVH * D], -1)
            q, k, v = q.view(B, NH, D), k.view(B, KVH, D), v.view(B, KVH, D)
            q, k = rope(q, cos, sin), rope(k, cos, sin)
            kc[l][rows, :, pos] = k
            vc[l][rows, :, pos] = v
            a = F.scaled_dot_product_attention(q[:, :, None, :], kc[l][:B], vc[l][:B], attn_mask=mask,
                                               enable_gqa=True)
            x = x + F.linear(a.reshape(B, NH * D), w["wo"])
            g, u = F.linear(rms(x, w["ln2"]), w["wgu"]).chunk(2, -1)
            x = x + F.linear(F.silu(g) * u, w["wd"])
        return F.linear(rms(x, lnf), emb).float()

    sizes = [1, 2, 4, 8, 16, 32]
    rows_out = []
    ok = True
    with torch.inference_mode():
        for mode in ("full", "full_and_piecewise"):
            wrapper = vgraph.GraphWrapper(step, rt, mode, capture_sizes=sizes)
            for B in (1, 3, 8, 13, 32, 48):  # hit, pad, hit, pad, hit, exceed
                for rep in range(3):  # eager first call, capture, replay
                    tok = torch.randint(0, V, (B,), device="cuda")
                    pos = torch.randint(0, MAXLEN // 2, (B,), device="cuda")
                    y = wrapper(tok, pos).clone()
                    P = wrapper.last_run["padded_tokens"]
                    pad = lambda t: torch.cat([t, t.new_zeros(P - B)])  # noqa: E731 - the wrapper's zero rows
                    ref = step(pad(tok), pad(pos))[:B]  # eager, same batch: what the graph must reproduce
                    plain = step(tok, pos)  # eager, unpadded
                    torch.cuda.synchronize()
                    good = torch.equal(y, ref)
                    ok &= good
                rows_out.append(dict(mode=mode, B=B, path=wrapper.last_run["path"], padded=P, equal_to_eager=good,
                                     max_abs_diff_unpadded=(y - plain).abs().max().item(), ok=good))
            wrapper.close()
        # replay cost: vg's wrapper vs torch.cuda.graph of the same callable, B = 8
        B = 8
        tok = torch.randint(0, V, (B,), device="cuda")
        pos = torch.randint(0, MAXLEN // 2, (B,), device="cuda")
        wrapper = vgraph.GraphWrapper(step, rt, "full", capture_sizes=[B])
        for _ in range(3):
            wrapper(tok, pos)
        general, run = [], wrapper._run  # calls through vg_runner_run: none once the replay path serves

        def counted(*a):
            general.append(1)
            return run(*a)
        wrapper._run = counted
        t_vg = timed(lambda: wrapper(tok, pos), reps=200)
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            for _ in range(2):
                step(tok, pos)
        torch.cuda.current_stream().wait_stream(s)
        g = torch.cuda.CUDAGraph()
        static_tok, static_pos = tok.clone(), pos.clone()
        with torch.cuda.graph(g):
            static_out = step(static_tok, static_pos)

        def torch_call():  # what a caller of torch.cuda.graph does per call: inputs in, replay
            static_tok.copy_(tok)
            static_pos.copy_(pos)
            g.replay()
            return static_out
        t_torch = timed(g.replay, reps=200)
        t_torch_call = timed(torch_call, reps=200)
        t_eager = timed(lambda: step(tok, pos), reps=50)
        same = torch.equal(wrapper(tok, pos), torch_call())
        _, total = wrapper.stats()
    results["b_graph_wrapper"] = dict(ok=ok and same, rows=rows_out, replay_ms_vg=round(t_vg, 4),
                                      replay_ms_torch_graph=round(t_torch, 4),
                                      call_ms_torch_graph=round(t_torch_call, 4), eager_ms=round(t_eager, 4),
                                      overhead_us=round((t_vg - t_torch_call) * 1e3, 1), same_as_torch_graph=same,
                                      timed_calls_through_vg_runner_run=len(general),
                                      stats_total=total)


# ---- (c) zero copy ---------------------------------------------------------------------------------

def proof_zero_copy(rt):
    t = torch.randn(1024, 256, device="cuda")
    v = vgraph.from_dlpack(t)
    back = torch.from_dlpack(v)
    from vgraph._native import Imported
    with Imported(rt, t) as imp:
        vg_ptr = imp.ptr
    results["c_zero_copy"] = dict(ok=v.data_ptr == t.data_ptr() == back.data_ptr() == vg_ptr,
                                  torch_ptr=hex(t.data_ptr()), vgraph_ptr=hex(v.data_ptr),
                                  vg_device_address=hex(vg_ptr), back_ptr=hex(back.data_ptr()))


def main():
    rt = vgraph.Runtime("cuda", device=torch.cuda.current_device())
    print(f"vgraph {vgraph.__version__}, vg ABI {vgraph.version()}, {rt}, torch {torch.__version__}, "
          f"{torch.cuda.get_device_name()}", flush=True)
    for name, fn in (("c_zero_copy", proof_zero_copy), ("b_graph_wrapper", proof_graph_wrapper),
                     ("a_hf_generate", proof_hf_qwen2_5_vl)):
        try:
            fn(rt)
        except Exception as e:  # each proof reports on its own
            import traceback
            traceback.print_exc()
            results[name] = dict(ok=False, error=repr(e)[:500])
        print(json.dumps({name: results[name]}), flush=True)
    print("\n==== vgraph GPU proof summary ====")
    for name in ("a_hf_generate", "b_graph_wrapper", "c_zero_copy"):
        r = results.get(name, {})
        extra = ""
        if name == "a_hf_generate" and "vision_ms_hf" in r:
            extra = (f"tokens equal: {r['tokens_hf'] == r['tokens_vg']}; vision part {r['vision_ms_hf']} ms (HF) -> "
                     f"{r['vision_ms_vg']} ms (vg), x{r['speedup']}")
        if name == "b_graph_wrapper" and "replay_ms_vg" in r:
            extra = (f"{sum(x['ok'] for x in r['rows'])}/{len(r['rows'])} sizes equal to eager; replay "
                     f"{r['replay_ms_vg']} ms (vg wrapper call) vs {r['call_ms_torch_graph']} ms (torch.cuda.graph: "
                     f"inputs copied + replay; bare replay {r['replay_ms_torch_graph']} ms), "
                     f"+{r['overhead_us']} us per call; eager {r['eager_ms']} ms; "
                     f"{r['timed_calls_through_vg_runner_run']} timed calls not on the replay path")
        if name == "c_zero_copy" and "torch_ptr" in r:
            extra = f"torch {r['torch_ptr']} -> vgraph {r['vgraph_ptr']} -> vg {r['vg_device_address']} -> torch {r['back_ptr']}"
        print(f"{name}: {'PASS' if r.get('ok') else 'FAIL'} {extra or r.get('error', '')}")
    rt.close()
    return 0 if all(results.get(n, {}).get("ok") for n in ("a_hf_generate", "b_graph_wrapper", "c_zero_copy")) else 1


if __name__ == "__main__":
    sys.exit(main())
