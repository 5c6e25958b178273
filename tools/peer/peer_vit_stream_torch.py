# SPDX-License-Identifier: Apache-2.0
"""Stream peer: replays the request list of `vg vit bench --stream N --requests-file FILE`
through PyTorch, one request at a time, as a server would, for the Qwen2.5-VL-7B vision tower
(synthetic bf16 weights, normal std 0.02, built as tools/peer/peer_vit_torch.py builds it).

Two methods, each printing one JSON line:
  sglang    SGLang's ViT graph runner: the patch embedding, window permutation and rotary
            tables run eagerly; blocks + merger run in a torch CUDA graph captured on first
            sight of a key and replayed after. The key is the exact patch count, with the
            number of images and of attention windows: the input, the rotary tables and the
            segment bounds (cu_seqlens) live in static tensors refreshed before each replay, so
            one graph serves every split of its patches into that many segments. (SGLang keys
            on the patch count alone and keeps the cu_seqlens it captured, which replays stale
            bounds for another split; sgl-project/sglang#16902 proposes adding the split to the
            key. On vg's request lists the two keys differ for a few percent of requests.)
            Each graph keeps torch's default private memory pool, as SGLang's do.
  compiled  the strongest peer of peer_vit_torch_compiled.py: the intermediate size zero-padded
            to a multiple of 128 (3420 -> 3456, exact), the layer and the merger under
            torch.compile (Inductor), a CUDA graph per key as above. One compiled layer serves
            all 32 (regional compilation, dynamic shapes): compiled once at load, which is
            reported as compile_s and not counted in the stream.
Attention is packed variable-length flash attention over cu_seqlens (SGLang's fa3 / triton
backends do the same; peer_vit_torch.py's SDPA reshape only works for one square image), its
grid sized by an upper bound (all patches for full attention, a window's 64 for the windows) so
that it fits every split of a key.

Latency of a request: CUDA events from just after its pixels are on the device (and its index
tables, made on the host as vg makes its own before its event) to the merged embeddings in
image order; a capture on first sight happens inside that span, as in vg --lazy. requests/s is
requests over the sum of those latencies; wall_s is the whole replay.

  python3 tools/peer/peer_vit_stream_torch.py REQUESTS.jsonl [--methods sglang,compiled]
          [--max-requests N] [--budget-s S] [--capture-warmup K] [--cpu-smoke]

The output of the first request, and of the first replay of a graph captured for another split,
is compared with Hugging Face's own forward (rel_err_first, rel_err_other_split). When the
device has no memory left for another graph, new keys run eagerly from then on (said in "note").
--budget-s stops a method that runs past S seconds (default 300): the line then says how many
requests it served ("done") and vg shows no ratio for it. --cpu-smoke runs a tiny tower on the
CPU without CUDA graphs (a graph is a recorded call there) and checks every request against
Hugging Face's forward (rel_err_max): the parsing, the model, the keys, the refreshed buffers
and the loop, where there is no GPU. Needs torch and transformers."""
import argparse, gc, json, sys, time

import torch
import torch.nn.functional as F

ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
ap.add_argument("requests", help="the request list: JSON lines with \"images\": [[height, width], ...]")
ap.add_argument("--methods", default="sglang,compiled")
ap.add_argument("--max-requests", type=int, default=0, help="replay only the first N requests")
ap.add_argument("--budget-s", type=float, default=300.0, help="stop a method after this many seconds")
ap.add_argument("--capture-warmup", type=int, default=1, help="eager runs before each capture")
ap.add_argument("--cpu-smoke", action="store_true", help="tiny tower on the CPU, no CUDA graphs")
args = ap.parse_args()


def fail(msg):
    print(f"peer_vit_stream_torch.py: {msg}", file=sys.stderr)
    sys.exit(1)


methods = [m for m in args.methods.split(",") if m]
if not methods or any(m not in ("sglang", "compiled") for m in methods):
    fail(f"--methods wants sglang and/or compiled, got '{args.methods}'")
SMOKE = args.cpu_smoke
if not SMOKE and not torch.cuda.is_available():
    fail("no CUDA device (use --cpu-smoke to check the script on a CPU)")

from transformers.models.qwen2_5_vl.configuration_qwen2_5_vl import Qwen2_5_VLVisionConfig
from transformers.models.qwen2_5_vl import modeling_qwen2_5_vl as m

torch.manual_seed(0)
dev = "cpu" if SMOKE else "cuda"
DT = torch.float32 if SMOKE else torch.bfloat16
if SMOKE:  # the test fixture's shape (models/vit: qwen2.5-vl-tiny)
    cfg = Qwen2_5_VLVisionConfig(depth=4, hidden_size=128, intermediate_size=200, num_heads=4,
            out_hidden_size=96, fullatt_block_indexes=[1, 3], window_size=112, patch_size=14,
            spatial_merge_size=2, temporal_patch_size=2, in_channels=3, hidden_act="silu")
else:
    cfg = Qwen2_5_VLVisionConfig(depth=32, hidden_size=1280, intermediate_size=3420, num_heads=16,
            out_hidden_size=3584, fullatt_block_indexes=[7, 15, 23, 31], window_size=112, patch_size=14,
            spatial_merge_size=2, temporal_patch_size=2, in_channels=3, hidden_act="silu")
cfg._attn_implementation = "sdpa"
HID, H = cfg.hidden_size, cfg.num_heads
D = HID // H
PATCH, MERGE = cfg.patch_size, cfg.spatial_merge_size
PDIM = cfg.in_channels * cfg.temporal_patch_size * PATCH * PATCH
WIN = (cfg.window_size // PATCH) ** 2  # the most patches a window holds
FULL = set(cfg.fullatt_block_indexes)
I = cfg.intermediate_size
IP = (I + 127) // 128 * 128

# ---- the request list ---------------------------------------------------------------------------
reqs = []
try:
    f = open(args.requests)
except OSError as e:
    fail(f"cannot read the request file {args.requests}: {e.strerror}")
with f:
    for n, line in enumerate(f, 1):
        if not line.strip():
            continue
        try:
            r = json.loads(line)
            imgs = [(int(h), int(w)) for h, w in r["images"]]
        except (ValueError, KeyError, TypeError) as e:
            fail(f"{args.requests}:{n}: not a request line ({e})")
        if r.get("patch", PATCH) != PATCH:
            fail(f"{args.requests}:{n}: made for patches of {r['patch']} pixels; this tower's are {PATCH}")
        if not imgs or any(h <= 0 or w <= 0 or h % (PATCH * MERGE) or w % (PATCH * MERGE) for h, w in imgs):
            fail(f"{args.requests}:{n}: sides must be positive multiples of {PATCH * MERGE} pixels")
        reqs.append([(h // PATCH, w // PATCH) for h, w in imgs])
if args.max_requests > 0:
    reqs = reqs[:args.max_requests]
if not reqs:
    fail(f"{args.requests} holds no requests")
n_images = sum(len(r) for r in reqs)
n_patches = sum(h * w for r in reqs for h, w in r)
WARM = [(8, 12), (8, 8)]  # the request the compiled method compiles on at load
max_S = max([sum(h * w for h, w in r) for r in reqs] + [sum(h * w for h, w in WARM)])

# the tower, once the list is known to be good
model = m.Qwen2_5_VisionTransformerPretrainedModel._from_config(cfg, dtype=DT).to(dev).eval()
for p in model.parameters():  # the smoke run's larger weights make attention far from uniform,
    torch.nn.init.normal_(p, std=0.2 if SMOKE else 0.02)  # so that its checks see a wrong split
pix_all = torch.randn(max_S, PDIM, device=dev, dtype=DT)


def quantile(xs, q):  # linear between closest ranks, as vg computes it
    s = sorted(xs)
    pos = q * (len(s) - 1)
    lo = int(pos)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (pos - lo)


# ---- the forward ------------------------------------------------------------------------------
if SMOKE:
    # per segment with SDPA: flash attention is CUDA-only. An opaque op, as the flash op is to
    # torch.compile, so that the smoke run compiles the same graph structure
    @torch.library.custom_op("vg_peer::varlen_attention_cpu", mutates_args=())
    def _varlen_cpu(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, cu: torch.Tensor, max_len: int) -> torch.Tensor:
        outs = []
        for a, b in zip(cu[:-1].tolist(), cu[1:].tolist()):
            qs, ks, vs = (t[a:b].transpose(0, 1) for t in (q, k, v))
            outs.append(F.scaled_dot_product_attention(qs, ks, vs).transpose(0, 1))
        return torch.cat(outs, 0)

    @_varlen_cpu.register_fake
    def _(q, k, v, cu, max_len):
        return torch.empty_like(q)

    def attention(q, k, v, cu, max_len):
        return _varlen_cpu(q, k, v, cu, max_len)
else:
    def attention(q, k, v, cu, max_len):  # packed varlen flash attention, [S, H, D]
        return torch.ops.aten._flash_attention_forward(q, k, v, cu, cu, max_len, max_len, 0.0, False,
                                                        False, scale=D ** -0.5)[0]


def layer_hf(x, cos, sin, cu, max_len, blk):
    """One block with HF's modules (SGLang's method runs the model's own layers)."""
    S = x.shape[0]
    q, k, v = blk.attn.qkv(blk.norm1(x)).reshape(S, 3, H, D).unbind(1)
    q, k = m.apply_rotary_pos_emb_vision(q, k, cos, sin)
    x = x + blk.attn.proj(attention(q, k, v, cu, max_len).reshape(S, HID))
    return x + blk.mlp(blk.norm2(x))


def layer_padded(x, cos, sin, cu, max_len: int, n1, qkv_w, qkv_b, proj_w, proj_b, n2, gu_w, gu_b, d_w, d_b):
    """One block with the MLP padded to IP, weights as arguments: one compiled code serves every
    layer (regional compilation)."""
    S = x.shape[0]
    h = x.float()
    h = (h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + 1e-6)).to(x.dtype) * n1
    q, k, v = F.linear(h, qkv_w, qkv_b).reshape(S, 3, H, D).unbind(1)
    q, k = m.apply_rotary_pos_emb_vision(q, k, cos, sin)
    x = x + F.linear(attention(q, k, v, cu, max_len).reshape(S, HID), proj_w, proj_b)
    h = x.float()
    h = (h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + 1e-6)).to(x.dtype) * n2
    gu = F.linear(h, gu_w, gu_b)
    return x + F.linear(F.silu(gu[:, :IP]) * gu[:, IP:], d_w, d_b)


def padded_weights():
    out = []
    with torch.no_grad():
        for blk in model.blocks:
            g, u, d = blk.mlp.gate_proj, blk.mlp.up_proj, blk.mlp.down_proj
            gu_w = torch.zeros(2 * IP, HID, device=dev, dtype=DT)
            gu_b = torch.zeros(2 * IP, device=dev, dtype=DT)
            gu_w[:I], gu_w[IP:IP + I] = g.weight, u.weight
            gu_b[:I], gu_b[IP:IP + I] = g.bias, u.bias
            d_w = torch.zeros(HID, IP, device=dev, dtype=DT)
            d_w[:, :I] = d.weight
            out.append((blk.norm1.weight, blk.attn.qkv.weight, blk.attn.qkv.bias, blk.attn.proj.weight,
                        blk.attn.proj.bias, blk.norm2.weight, gu_w, gu_b, d_w, d.bias))
    return out


def make_blocks_merger(method):
    if method == "sglang":
        def fwd(x, cos, sin, cu_full, max_full, cu_win):
            for i, blk in enumerate(model.blocks):
                full = i in FULL
                x = layer_hf(x, cos, sin, cu_full if full else cu_win, max_full if full else WIN, blk)
            return model.merger(x)
        return fwd, 0.0
    weights = padded_weights()
    # the smoke run compiles with the eager backend: Dynamo's tracing is checked, Inductor's C++
    # build of a CPU kernel would take minutes on a small machine
    layer = torch.compile(layer_padded, dynamic=True, backend="eager" if SMOKE else "inductor")
    merger = torch.compile(model.merger, dynamic=True, backend="eager" if SMOKE else "inductor")

    def fwd(x, cos, sin, cu_full, max_full, cu_win):
        for i, w in enumerate(weights):
            full = i in FULL
            x = layer(x, cos, sin, cu_full if full else cu_win, max_full if full else WIN, *w)
        return merger(x)
    # compiled at load, as a server would, on a request of two small images
    t0 = time.perf_counter()
    with torch.inference_mode():
        prep = prepare(WARM)
        fwd(*pre_blocks(prep)[:3], prep["cu_full"], prep["max_full"], prep["cu_win"])
    sync()
    return fwd, time.perf_counter() - t0


def sync():
    if not SMOKE:
        torch.cuda.synchronize()


def prepare(grids):
    """The host side of a request: index tables, made before its timing starts (vg's prepare
    does the same before its first event)."""
    grid = torch.tensor([[1, h, w] for h, w in grids])
    S = sum(h * w for h, w in grids)
    pos = m.get_vision_position_ids(grid, MERGE, kwargs={}) if hasattr(m, "get_vision_position_ids") else None
    window_index, cu_win = m.get_vision_window_index(grid, spatial_merge_size=MERGE, window_size=cfg.window_size,
                                                     patch_size=PATCH, kwargs={})
    cu_full = F.pad(torch.tensor([h * w for h, w in grids]).cumsum(0), (1, 0)).to(torch.int32)
    return dict(S=S, grids=tuple(grids), grid=grid.to(dev), pos=None if pos is None else pos.to(dev),
                window_index=window_index.to(dev), rev=torch.argsort(window_index).to(dev),
                cu_win=cu_win.to(device=dev, dtype=torch.int32), cu_full=cu_full.to(dev),
                max_full=S, key=(S, len(grids), int(cu_win.numel())))


def pre_blocks(p):
    """Patch embedding, window permutation, rotary tables: eager, outside the graph (SGLang)."""
    S = p["S"]
    hs = model.patch_embed(pix_all[:S])
    hs = model.permute_input_for_window_attn(hs, p["window_index"], seq_len=S)
    cos, sin = (model.permute_input_for_window_attn(f, p["window_index"], seq_len=S)
                for f in model.rotary_pos_emb(hs, p["pos"]))
    return hs, cos, sin


class Graph:
    """blocks + merger for one key: a CUDA graph with its own private pool, captured after
    warm-up runs on a side stream as peer_vit_torch.py does; on the CPU, a recorded call. The
    input, the rotary tables and the segment bounds live in static tensors, refreshed before
    each replay, so one graph serves every request with the same key."""

    def __init__(self, fwd, hs, cos, sin, p):
        self.x, self.cos, self.sin = hs.clone(), cos.clone(), sin.clone()
        self.cu_full, self.cu_win = p["cu_full"].clone(), p["cu_win"].clone()
        self.grids = p["grids"]
        call = lambda: fwd(self.x, self.cos, self.sin, self.cu_full, p["max_full"], self.cu_win)
        if SMOKE:
            self.replay_fn = call
            return
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            for _ in range(args.capture_warmup):
                call()
        torch.cuda.current_stream().wait_stream(s)
        self.g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(self.g):
            self.out = call()

    def run(self, hs, cos, sin, p):
        for dst, src in ((self.x, hs), (self.cos, cos), (self.sin, sin), (self.cu_full, p["cu_full"]),
                         (self.cu_win, p["cu_win"])):
            dst.copy_(src)
        if SMOKE:
            return self.replay_fn()
        self.g.replay()
        return self.out


def rel_err(out, p):
    ref = model(pix_all[:p["S"]], grid_thw=p["grid"])
    ref = (ref.pooler_output if hasattr(ref, "pooler_output") else ref[0]).float()
    return float(f"{((out.float() - ref).abs().max() / ref.abs().max()).item():.3g}")


def run_method(method):
    line = dict(stream="vit", method=method, requests=len(reqs), images=n_images, patches=n_patches,
                device="cpu (smoke)" if SMOKE else torch.cuda.get_device_name(),
                torch=torch.__version__, capture_warmup=args.capture_warmup)
    fwd, compile_s = make_blocks_merger(method)
    if method == "compiled":
        line["compile_s"] = round(compile_s, 2)
    graphs, lat, keys_S = {}, [], set()
    captures = eager = 0
    capture_ms = check_s = 0.0
    memory_full = None
    note = ""
    sync()
    reserved0 = 0 if SMOKE else torch.cuda.memory_reserved()
    t_start = time.perf_counter()
    with torch.inference_mode():
        for i, grids in enumerate(reqs):
            if time.perf_counter() - t_start - check_s > args.budget_s:
                note = f"stopped after {args.budget_s:g} s (--budget-s)"
                break
            p = prepare(grids)
            keys_S.add(p["S"])
            sync()
            if SMOKE:
                t0 = time.perf_counter()
            else:
                e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                e0.record()
            hs, cos, sin = pre_blocks(p)
            g = graphs.get(p["key"])
            if g is None and memory_full is None:
                c0 = time.perf_counter()
                try:
                    g = graphs[p["key"]] = Graph(fwd, hs, cos, sin, p)
                    captures += 1
                except torch.cuda.OutOfMemoryError:
                    g = None
                    memory_full = i
                    gc.collect()
                    torch.cuda.empty_cache()
                capture_ms += (time.perf_counter() - c0) * 1e3
            reused = g is not None and g.grids != p["grids"]
            if g is not None:
                out = g.run(hs, cos, sin, p)
            else:  # out of memory for another graph: eager from here on for new keys
                eager += 1
                out = fwd(hs, cos, sin, p["cu_full"], p["max_full"], p["cu_win"])
            out = out[p["rev"]]
            if SMOKE:
                lat.append((time.perf_counter() - t0) * 1e3)
            else:
                e1.record()
                torch.cuda.synchronize()
                lat.append(e0.elapsed_time(e1))
            # against HF's own forward: the first request, and the first replay of a graph
            # captured for another split of its patches (every request in the smoke run); not
            # counted in wall_s or the budget
            c0 = time.perf_counter()
            if i == 0:
                line["rel_err_first"] = rel_err(out, p)
                if not SMOKE:
                    torch.cuda.empty_cache()
            if reused and "rel_err_other_split" not in line:
                line["rel_err_other_split"] = rel_err(out, p)
                if not SMOKE:  # the check's own cached blocks are not the stream's memory
                    torch.cuda.empty_cache()
            if SMOKE:
                line["rel_err_max"] = max(line.get("rel_err_max", 0.0), rel_err(out, p))
            check_s += time.perf_counter() - c0
    wall = time.perf_counter() - t_start - check_s
    if memory_full is not None:
        note = (note + "; " if note else "") + f"out of memory for another graph at request {memory_full}: new keys ran eagerly"
    line.update(done=len(lat), requests_per_s=round(len(lat) / (sum(lat) / 1e3), 3) if lat else None,
                p50_ms=round(quantile(lat, 0.5), 3) if lat else None,
                p99_ms=round(quantile(lat, 0.99), 3) if lat else None,
                mean_ms=round(sum(lat) / len(lat), 3) if lat else None, wall_s=round(wall, 2),
                captures=captures, capture_s=round(capture_ms / 1e3, 2), eager_requests=eager,
                distinct_patch_counts=len(keys_S))
    if not SMOKE:
        line["graph_mib"] = round((torch.cuda.memory_reserved() - reserved0) / 2**20, 1)
    if note:
        line["note"] = note
    del graphs
    gc.collect()
    if not SMOKE:
        torch.cuda.empty_cache()
    return line


status = 0
for method in methods:
    try:
        line = run_method(method)
    except Exception as ex:  # one method failing leaves the other's line
        line = dict(stream="vit", method=method, error=repr(ex)[:400])
        status = 1
    if line.get("done") == 0:
        line = dict(stream="vit", method=method, error=line.get("note", "no request served"))
        status = 1
    print(json.dumps(line), flush=True)
sys.exit(status)
