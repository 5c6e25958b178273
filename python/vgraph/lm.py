# SPDX-License-Identifier: Apache-2.0
"""Decoder-only language models (vg_lm.h): Qwen2 and Qwen3 with a paged KV cache, graphs per
token-count bucket. Sequences, steps, and a greedy generate that stops at EOS."""
import array
import ctypes
import os

from . import _types as T
from . import dlpack as D
from ._errors import check, checked_int, raise_python, ERR_INVALID_ARG
from ._lib import libmodels
from .graph import run_info_dict
from ._model import DTYPE_BY_NAME, ModelBase, graph_options, info_dict


def _tokens(obj, what):
    vals = obj.tolist() if hasattr(obj, "tolist") else list(obj)
    if isinstance(vals, int):
        vals = [vals]
    try:  # C's int32 conversion checks a whole prompt at C speed (a float or an overflow raises)
        out = array.array("i", vals)
    except (OverflowError, TypeError):  # the slow path, which names the value or takes a whole float
        out = array.array("i", [checked_int(v, f"{what}: token", 32) for v in vals])
    if not out:
        raise_python(ERR_INVALID_ARG, f"{what}: no tokens")
    return out


class StepOutput:
    """logits [num, vocab] float32 (None when not asked for), greedy: the argmax of each row
    (computed on the device), and run: what the runner did (bucket, full/piecewise/eager)."""

    def __init__(self, logits, greedy, info):
        self.logits = logits
        self.greedy = greedy
        self.run = run_info_dict(info.run)
        self.num_tokens = info.num_tokens
        self.uniform = bool(info.uniform)
        self.total_ms = info.total_ms


class LanguageModel(ModelBase):
    """A Hugging Face model directory (config.json of model_type qwen2 or qwen3, safetensors), or a
    named synthetic configuration (LanguageModel.synthetic(rt, "qwen2-tiny")). Graph options as
    VisionEncoder's; KV options: block_size, num_blocks (0: kv_memory_fraction of free memory),
    max_seqs, max_seq_len. A tokenizer is loaded from the directory when it holds one and
    transformers is installed (tokenizer=False turns that off)."""

    _NAME, _API = "LanguageModel", "lm"

    def __init__(self, runtime, model_dir=None, *, mode="full_and_piecewise", capture_sizes=None, max_capture_size=0,
                 warmup=False, dtype=None, block_size=0, num_blocks=0, kv_memory_fraction=0.0, max_seqs=0,
                 max_seq_len=0, tokenizer=None, _synthetic=None):
        self.runtime = runtime
        self._res = None
        o, keep = self._options(mode, capture_sizes, max_capture_size, warmup, dtype)
        o.block_size, o.num_blocks, o.kv_memory_fraction = int(block_size), int(num_blocks), float(kv_memory_fraction)
        o.max_seqs, o.max_seq_len = int(max_seqs), int(max_seq_len)
        h = ctypes.c_void_p()
        m = libmodels()
        if _synthetic is not None:
            config, seed = _synthetic
            check(m.vg_lm_create_synthetic(runtime.handle, config.encode(), seed, DTYPE_BY_NAME[dtype or "float32"],
                                           ctypes.byref(o), ctypes.byref(h)))
        else:
            check(m.vg_lm_load(runtime.handle, str(model_dir).encode(), ctypes.byref(o), ctypes.byref(h)))
        del keep
        self._adopt(runtime, h)
        self.model_dir = model_dir
        self.info = self.get_info()
        self.vocab = self.info["vocab"]
        self.tokenizer = self._load_tokenizer(model_dir) if tokenizer is None else (tokenizer or None)
        # the model's end-of-sequence ids as vg read them (generation_config.json, else config.json)
        self.eos_token_id = self.info["eos_ids"] or None

    @classmethod
    def synthetic(cls, runtime, config, seed=1, dtype="float32", **kw):
        """"qwen2.5-0.5b", "qwen3-0.6b", "qwen2-tiny", or a config.json path, with deterministic
        synthetic weights."""
        return cls(runtime, None, dtype=dtype, _synthetic=(config, int(seed)), **kw)

    @staticmethod
    def _options(mode, capture_sizes, max_capture_size, warmup, dtype):
        o = T.options_init(libmodels().vg_lm_options_init, T.LmOptions)
        return o, graph_options(o, "LanguageModel", mode, capture_sizes, max_capture_size, warmup, dtype)

    @staticmethod
    def _load_tokenizer(model_dir):
        if not model_dir or not any(os.path.exists(os.path.join(model_dir, f))
                                    for f in ("tokenizer.json", "tokenizer_config.json", "vocab.json")):
            return None
        try:
            from transformers import AutoTokenizer
        except ImportError:
            return None
        return AutoTokenizer.from_pretrained(model_dir)

    def get_info(self):
        i = T.LmInfo()
        check(libmodels().vg_lm_get_info(self.handle, ctypes.byref(i)))
        d = info_dict(i)
        d["eos_ids"] = list(i.eos_ids[:i.num_eos])
        return d

    # ---- sequences and steps -------------------------------------------------------------------

    def add_sequence(self):
        """A new empty sequence; returns its id."""
        s = ctypes.c_int32()
        check(libmodels().vg_lm_seq_add(self.handle, ctypes.byref(s)))
        return s.value

    def free_sequence(self, seq):
        check(libmodels().vg_lm_seq_free(self.handle, checked_int(seq, "LanguageModel.free_sequence", 32)))

    def sequence_length(self, seq):
        """Tokens the sequence holds in the KV cache; -1 for an unknown id."""
        seq = checked_int(seq, "LanguageModel.sequence_length", 64)
        if not -(1 << 31) <= seq < 1 << 31:  # beyond vg's int32 ids: no sequence has it
            return -1
        return libmodels().vg_lm_seq_len(self.handle, seq)

    def step(self, batch, logits=True):
        """One forward. batch: {seq: tokens} or [(seq, tokens), ...], tokens any int sequence or
        array (a whole prompt, a chunk, or one decode token). Returns a StepOutput: logits
        [len(batch), vocab] float32 for each sequence's last new token (as NumPy when numpy is
        installed, else a vgraph.Tensor; None with logits=False) and greedy, the argmax per row."""
        items = list(batch.items()) if isinstance(batch, dict) else list(batch)
        if not items:
            raise_python(ERR_INVALID_ARG, "LanguageModel.step: an empty batch")
        arrays = []
        seqs = (T.LmSeqTokens * len(items))()
        for k, (seq, toks) in enumerate(items):
            toks = _tokens(toks, f"LanguageModel.step: sequence {seq}")
            a = (ctypes.c_int32 * len(toks)).from_buffer(toks)  # the array's own int32 memory, no copy
            arrays.append(a)
            seqs[k] = T.LmSeqTokens(checked_int(seq, "LanguageModel.step: sequence id", 32), a, len(toks))
        num, vocab = len(items), self.vocab
        greedy = (ctypes.c_int32 * num)()
        info = T.LmStepInfo()
        m = libmodels()
        if logits:
            # host memory the caller owns through the returned array (no copy on the way out)
            buf = ctypes.create_string_buffer(num * vocab * 4)
            check(m.vg_lm_step(self.handle, seqs, num, ctypes.cast(buf, ctypes.POINTER(ctypes.c_float)), greedy,
                               ctypes.byref(info)))
            t = D.Tensor(ctypes.addressof(buf), (num, vocab), "float32", owner=buf)
            try:
                out = t.numpy()
            except ImportError:
                out = t
        else:
            check(m.vg_lm_step(self.handle, seqs, num, None, greedy, ctypes.byref(info)))
            out = None
        return StepOutput(out, list(greedy), info)

    # ---- generation -----------------------------------------------------------------------------

    def generate(self, prompts, max_new_tokens, eos_token_id=None, prefill_chunk=0):
        """Greedy continuation of each prompt, all in one batch: a prefill step, then one decode step
        per new token for the sequences still going. A sequence stops after max_new_tokens or at
        its first token in eos_token_id (an int or a list; None: the model directory's
        generation_config/config, or no EOS); the EOS token is kept in its output, as Hugging
        Face's generate does. prompts: token lists (or arrays), or strings when the model has a
        tokenizer (then strings come back). prefill_chunk > 0 splits prompts into chunks of that
        many tokens. Returns the new tokens (or texts), one entry per prompt."""
        if max_new_tokens < 0:
            raise_python(ERR_INVALID_ARG, f"LanguageModel.generate: max_new_tokens is {max_new_tokens}")
        texts = bool(prompts) and isinstance(prompts[0], str)
        if texts:
            if self.tokenizer is None:
                raise_python(ERR_INVALID_ARG, "LanguageModel.generate: text prompts need a tokenizer (the model "
                             "directory has none, or transformers is not installed)")
            ids = [self.tokenizer(p)["input_ids"] for p in prompts]
        else:
            ids = [_tokens(p, f"LanguageModel.generate: prompt {k}") for k, p in enumerate(prompts)]
        eos = self.eos_token_id if eos_token_id is None else eos_token_id
        eos_set = set() if eos is None else set([eos] if isinstance(eos, int) else eos)
        outs = [[] for _ in ids]
        seqs = []
        try:
            for _ in ids:
                seqs.append(self.add_sequence())
            if max_new_tokens > 0:
                last = self._prefill(seqs, ids, prefill_chunk)
                live = []
                for k, tok in enumerate(last):
                    outs[k].append(tok)
                    if tok not in eos_set and max_new_tokens > 1:
                        live.append(k)
                while live:
                    r = self.step([(seqs[k], [outs[k][-1]]) for k in live], logits=False)
                    still = []
                    for k, tok in zip(live, r.greedy):
                        outs[k].append(tok)
                        if tok not in eos_set and len(outs[k]) < max_new_tokens:
                            still.append(k)
                    live = still
        finally:
            for s in seqs:
                self.free_sequence(s)
        if texts:
            return [self.tokenizer.decode(o, skip_special_tokens=True) for o in outs]
        return outs

    def _prefill(self, seqs, ids, chunk):
        """Run every prompt through the cache; returns each one's greedy next token."""
        if chunk <= 0:
            return self.step(list(zip(seqs, ids)), logits=False).greedy
        pos = [0] * len(ids)
        last = [None] * len(ids)
        while any(p < len(t) for p, t in zip(pos, ids)):
            batch = [(k, ids[k][pos[k]:pos[k] + chunk]) for k in range(len(ids)) if pos[k] < len(ids[k])]
            r = self.step([(seqs[k], t) for k, t in batch], logits=False)
            for (k, t), g in zip(batch, r.greedy):
                pos[k] += len(t)
                last[k] = g
        return last
