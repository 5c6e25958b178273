# SPDX-License-Identifier: Apache-2.0
"""The language model through the package: steps and greedy generation against Hugging Face."""
import numpy as np
import pytest

import vgraph
from conftest import DATA, load, rel_err


def _case(model, case):
    inp = load(DATA / model / f"{case}.input.safetensors")
    exp = load(DATA / model / f"{case}.expected.safetensors")
    ids, lens = inp["input_ids"].tolist(), inp["prompt_lens"].tolist()
    prompts, p = [], 0
    for n in lens:
        prompts.append(ids[p:p + n])
        p += n
    return prompts, int(inp["max_new_tokens"][0]), exp


def _lm(rt, model, **kw):
    return vgraph.LanguageModel(rt, DATA / model / "model", num_blocks=256, max_seqs=8, **kw)


def _trusted(exp, b, prompt_len, n):
    """How many generated tokens of prompt b HF's reference pins down: up to the first near-tie
    (top-1 minus top-2 below 1e-3 x max|logit|), where any implementation may pick either."""
    margin, logits = exp[f"margin.{b}"], exp[f"logits.{b}"]
    tol = 1e-3 * np.abs(logits).max()
    for j in range(n):
        if margin[prompt_len - 1 + j] < tol:
            return j + 1
    return n


@pytest.mark.parametrize("model", ["qwen2_tiny", "qwen3_tiny"])
def test_generate_matches_reference(runtime, model):
    prompts, n, exp = _case(model, "prompts")
    with _lm(runtime, model) as lm:
        out = lm.generate(prompts, n)
        assert lm.get_info()["live_seqs"] == 0  # generate frees its sequences
        chunked = lm.generate(prompts, n, prefill_chunk=7)
    for b, p in enumerate(prompts):
        k = _trusted(exp, b, len(p), n)
        assert out[b][:k] == exp[f"sequence.{b}"][len(p):len(p) + k].tolist()
        assert chunked[b] == out[b]


def test_step_logits_match_reference(stub):
    prompts, n, exp = _case("qwen2_tiny", "prompts")
    with _lm(stub, "qwen2_tiny") as lm:
        seqs = [lm.add_sequence() for _ in prompts]
        r = lm.step({s: p for s, p in zip(seqs, prompts)})
        assert r.logits.shape == (len(prompts), lm.vocab) and r.logits.dtype == np.float32
        for b, p in enumerate(prompts):
            assert rel_err(r.logits[b], exp[f"logits.{b}"][len(p) - 1]) < 1e-4
            assert r.greedy[b] == int(np.argmax(r.logits[b]))
            assert lm.sequence_length(seqs[b]) == len(p)
        d = lm.step([(s, [g]) for s, g in zip(seqs, r.greedy)], logits=False)
        assert d.logits is None and d.uniform and d.num_tokens == len(prompts)
        for s in seqs:
            lm.free_sequence(s)
        assert lm.sequence_length(seqs[0]) == -1


def test_generate_stops_at_eos(stub):
    prompts, n, exp = _case("qwen2_tiny", "prompts")
    with _lm(stub, "qwen2_tiny") as lm:
        free = lm.generate(prompts, n)
        eos = free[0][2]  # the third token of prompt 0 becomes the end of sequence
        stopped = lm.generate(prompts, n, eos_token_id=eos)
        assert stopped[0] == free[0][:free[0].index(eos) + 1]
        for b in range(1, len(prompts)):  # the others stop at their own first eos, or run to n
            want = free[b][:free[b].index(eos) + 1] if eos in free[b] else free[b]
            assert stopped[b] == want
        assert lm.generate(prompts, n, eos_token_id=[eos, free[1][0]])[1] == free[1][:1]
        assert lm.generate(prompts, 1) == [f[:1] for f in free]
        assert lm.generate(prompts, 0) == [[] for _ in prompts]


def test_refusals(stub):
    with _lm(stub, "qwen2_tiny") as lm:
        s = lm.add_sequence()
        with pytest.raises(vgraph.VgError) as e:
            lm.step({s: [lm.vocab + 5]})
        assert e.value.status_name == "VG_ERR_INVALID_ARG"
        with pytest.raises(vgraph.VgError):
            lm.step({s + 1: [1]})
        with pytest.raises(vgraph.VgError):
            lm.step({})
        with pytest.raises(vgraph.VgError):  # no tokenizer in the fixture's directory
            lm.generate(["hello"], 2)
        # values a C int32 cannot hold, or not integers: refused, never wrapped or truncated
        for bad in ({s: [2**32 + 5]}, {s: [10**30]}, {s: [1.5]}, {2**32 + s: [1]}):
            with pytest.raises(vgraph.VgError) as e:
                lm.step(bad)
            assert e.value.status_name == "VG_ERR_INVALID_ARG"
        with pytest.raises(vgraph.VgError):
            lm.free_sequence(2**32 + s)
        assert lm.sequence_length(s) == 0  # the refusals left the sequence alone
        assert lm.sequence_length(2**32 + s) == -1  # no such id
        lm.free_sequence(s)
        assert lm.tokenizer is None


class _Tokenizer:
    """A stand-in for a Hugging Face tokenizer: one token per character."""

    def __call__(self, text):
        return {"input_ids": [ord(c) % 500 for c in text]}

    def decode(self, ids, skip_special_tokens=True):
        return "".join(chr(97 + i % 26) for i in ids)


def test_text_in_and_out_through_a_tokenizer(stub):
    with _lm(stub, "qwen2_tiny", tokenizer=_Tokenizer()) as lm:
        texts = lm.generate(["hello", "vg"], 4)
        ids = lm.generate([_Tokenizer()("hello")["input_ids"], _Tokenizer()("vg")["input_ids"]], 4)
    assert texts == [_Tokenizer().decode(x) for x in ids] and all(len(t) == 4 for t in texts)


@pytest.mark.parametrize("model", ["qwen2_tiny", "qwen3_tiny"])
def test_info_carries_the_models_eos(stub, model):
    """vg_lm_info's whole struct crosses (its appended EOS ids too), and generate's default EOS is
    the one vg read from the model directory."""
    import json
    cfg = json.loads((DATA / model / "model" / "config.json").read_text())
    want = cfg.get("eos_token_id")
    want = [] if want is None else [want] if isinstance(want, int) else list(want)
    with _lm(stub, model) as lm:
        info = lm.get_info()
        assert info["eos_ids"] == want and info["num_eos"] == len(want)
        assert lm.eos_token_id == (want or None)
