# SPDX-License-Identifier: Apache-2.0
"""LLM decode peer: HF transformers Qwen2 (Qwen2.5-0.5B shape, synthetic bf16 weights) greedy decode.
(a) eager with the dynamic cache; (b) static cache + torch.compile (HF's fast path: CUDA graphs).
Per-token decode time = (t(new=1+N) - t(new=1)) / N, from CUDA events. Prints JSON lines."""
import json, os, statistics, sys, time, torch
from transformers import AutoConfig, AutoModelForCausalLM

dev, DT = "cuda", torch.bfloat16
torch.manual_seed(0)
cfg = AutoConfig.for_model(model_type="qwen2", vocab_size=151936, hidden_size=896, intermediate_size=4864,
                           num_hidden_layers=24, num_attention_heads=14, num_key_value_heads=2,
                           max_position_embeddings=4096, rms_norm_eps=1e-6, rope_theta=1e6,
                           tie_word_embeddings=True, use_sliding_window=False)
cfg._attn_implementation = "sdpa"
model = AutoModelForCausalLM.from_config(cfg, dtype=DT).to(dev).eval()
for p in model.parameters():
    torch.nn.init.normal_(p, std=0.02)
PROMPT, N = int(os.environ.get("LM_PROMPT", "512")), int(os.environ.get("LM_NEW", "64"))

def timed_generate(ids, new, **kw):
    torch.cuda.synchronize(); s = torch.cuda.Event(enable_timing=True); e = torch.cuda.Event(enable_timing=True)
    s.record(); model.generate(ids, max_new_tokens=new, min_new_tokens=new, do_sample=False, pad_token_id=0, **kw); e.record()
    torch.cuda.synchronize(); return s.elapsed_time(e)

with torch.inference_mode():
    for B in [int(b) for b in (sys.argv[1:] or ["1", "16", "64"])]:
        ids = torch.randint(0, cfg.vocab_size, (B, PROMPT), device=dev)
        row = dict(B=B, prompt=PROMPT, new=N)
        for name, kw in (("eager", {}), ("static_compiled", dict(cache_implementation="static"))):
            try:
                t0 = time.time()
                for _ in range(2): timed_generate(ids, 1 + N, **kw)  # warm-up / compile
                row[f"{name}_warm_s"] = round(time.time() - t0, 1)
                one = statistics.median(timed_generate(ids, 1, **kw) for _ in range(3))
                full = statistics.median(timed_generate(ids, 1 + N, **kw) for _ in range(3))
                row[f"{name}_ms_per_step"] = round((full - one) / N, 4)
                row[f"{name}_tok_s"] = round(B * N / (full - one) * 1000, 1)
            except Exception as ex:
                row[f"{name}_error"] = repr(ex)[:300]
        print(json.dumps(row), flush=True)
