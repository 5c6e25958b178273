# SPDX-License-Identifier: Apache-2.0
"""Vision encoders through the package, against the Hugging Face reference's embeddings."""
import numpy as np
import pytest

import vgraph
from conftest import DATA, load, rel_err

CASES = [("qwen2_5_vl_tiny", "two_images"), ("qwen2_5_vl_tiny", "video"), ("qwen3_vl_tiny", "two_images"),
         ("qwen3_vl_odd", "up_and_down")]


@pytest.mark.parametrize("model,case", CASES)
def test_encode_matches_reference(runtime, backend, model, case):
    tol = 1e-4 if backend == "kunlun_stub" else 1e-3  # the fixtures' tolerances: CPU, and a GPU's
    inp = load(DATA / model / f"{case}.input.safetensors")
    exp = load(DATA / model / f"{case}.expected.safetensors")
    with vgraph.VisionEncoder(runtime, DATA / model / "model") as enc:
        for _ in range(2):  # the first call of a bucket, then the one after it (a replay where graphs run)
            out = enc.encode(inp["pixel_values"], inp["grid_thw"])
            assert isinstance(out.embeddings, np.ndarray) and out.embeddings.shape == exp["embeddings"].shape
            assert rel_err(out.embeddings, exp["embeddings"]) < tol
            ks = sorted(k for k in exp if k.startswith("deepstack."))
            assert len(out.deepstack) == len(ks) == enc.info["num_deepstack"]
            for k, name in enumerate(ks):
                assert rel_err(out.deepstack[k], exp[name]) < tol
        rows, total = enc.runner_stats()
        assert total["hits"] == 2


def test_half_precision_input_and_graph_replay(stub):
    inp = load(DATA / "qwen2_5_vl_tiny" / "one_image.input.safetensors")
    exp = load(DATA / "qwen2_5_vl_tiny" / "one_image.expected.safetensors")
    with vgraph.VisionEncoder(stub, DATA / "qwen2_5_vl_tiny" / "model", mode="full") as enc:
        px = inp["pixel_values"].astype(np.float16)
        runs = [enc.encode(px, inp["grid_thw"]).run for _ in range(3)]
        assert runs[-1]["path"] == "full" and runs[-1]["graph_launches"] == 1  # the stub replays vg's graphs
        out = enc.encode(px, inp["grid_thw"].tolist())  # grid_thw as plain lists too
        assert rel_err(out.embeddings, exp["embeddings"]) < 1e-2
        enc.reconfigure(mode="none")
        assert enc.encode(px, inp["grid_thw"]).run["path"] == "eager"


def test_synthetic_configuration(stub):
    with vgraph.VisionEncoder.synthetic(stub, "qwen2.5-vl-tiny") as enc:
        assert enc.info["model_type"] == "qwen2_5_vl" and enc.info["patch_dim"] > 0


def test_bad_inputs_raise(stub):
    with vgraph.VisionEncoder(stub, DATA / "qwen2_5_vl_tiny" / "model") as enc:
        pd = enc.info["patch_dim"]
        with pytest.raises(vgraph.VgError) as e:  # grid says 64 patches, pixel_values has 10
            enc.encode(np.zeros((10, pd), np.float32), [[1, 8, 8]])
        assert e.value.status_name == "VG_ERR_INVALID_ARG"
        with pytest.raises(vgraph.VgError):
            enc.encode(np.zeros((64, pd), np.int32), [[1, 8, 8]])
        with pytest.raises(vgraph.VgError):
            enc.encode(np.zeros((64, pd), np.float32), [[1, 8]])
        with pytest.raises(vgraph.VgError):
            enc.encode(np.zeros((64, pd), np.float32)[:, ::2], [[1, 8, 8]])
        for grid in ([[2**64 + 1, 8, 8]], [[1.9, 8, 8]]):  # not wrapped, not truncated
            with pytest.raises(vgraph.VgError):
                enc.encode(np.zeros((64, pd), np.float32), grid)
    with pytest.raises(vgraph.VgError) as e:
        vgraph.VisionEncoder(stub, DATA / "no_such_model")
    assert "no_such_model" in e.value.message
