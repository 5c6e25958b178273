# SPDX-License-Identifier: Apache-2.0
"""PyTorch on CUDA (the GPU machine): tensors cross without copies, the vision encoder reads CUDA
tensors in place, and GraphWrapper captures torch work on torch's stream. Skipped without torch, a
CUDA device or vg's cuda backend."""
import sys
import pathlib

import pytest

torch = pytest.importorskip("torch")
import vgraph  # noqa: E402

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
from conftest import DATA, load, rel_err  # noqa: E402

if not torch.cuda.is_available():
    pytest.skip("no CUDA device", allow_module_level=True)
if not vgraph.probe("cuda").usable:
    pytest.skip("vg's cuda backend is not usable here", allow_module_level=True)


@pytest.fixture(scope="module")
def cuda():
    rt = vgraph.Runtime("cuda", device=torch.cuda.current_device())
    yield rt
    rt.close()


def test_zero_copy_both_ways(cuda):
    t = torch.arange(64, dtype=torch.float32, device="cuda").reshape(8, 8)
    v = vgraph.from_dlpack(t)
    assert v.data_ptr == t.data_ptr() and v.device_name == "cuda"
    back = torch.from_dlpack(v)
    assert back.data_ptr() == t.data_ptr() and back.device == t.device
    from vgraph._native import Imported
    with Imported(cuda, t) as imp:  # vg adopts torch's memory for its ops and graphs
        assert imp.ptr == t.data_ptr()


def test_foreign_capture_capability(cuda):
    assert cuda.captures_foreign_work and "foreign_capture" in cuda.caps


def test_vit_reads_cuda_tensors_in_place(cuda):
    inp = load(DATA / "qwen2_5_vl_tiny" / "two_images.input.safetensors")
    exp = load(DATA / "qwen2_5_vl_tiny" / "two_images.expected.safetensors")
    with vgraph.VisionEncoder(cuda, DATA / "qwen2_5_vl_tiny" / "model") as enc:
        px = torch.from_numpy(inp["pixel_values"]).cuda()
        grid = torch.from_numpy(inp["grid_thw"]).cuda()
        out = enc.encode(px, grid)
        assert out.embeddings.is_cuda and rel_err(out.embeddings.cpu().numpy(), exp["embeddings"]) < 1e-3
        host = enc.encode(inp["pixel_values"], inp["grid_thw"])
        assert rel_err(out.embeddings.cpu().numpy(), host.embeddings) < 1e-5


def _mlp(seed=0, h=64):
    g = torch.Generator(device="cuda").manual_seed(seed)
    w1 = torch.randn(4 * h, h, device="cuda", generator=g) * 0.05
    w2 = torch.randn(h, 4 * h, device="cuda", generator=g) * 0.05

    def f(x):
        return torch.nn.functional.linear(torch.nn.functional.silu(torch.nn.functional.linear(x, w1)), w2) + x
    return f


@pytest.mark.parametrize("mode", ["full", "piecewise", "full_and_piecewise"])
def test_graph_wrapper_captures_torch(cuda, mode):
    f = _mlp()
    sizes = [8, 16, 32]
    if mode == "piecewise":  # two graphed pieces around an eager "splitting op"
        g = vgraph.GraphWrapper(pieces=[f, vgraph.Piece(lambda x: x * 2, splitting=True), f], runtime=cuda,
                                runtime_mode=mode, capture_sizes=sizes)
        ref_fn = lambda x: f(f(x) * 2)  # noqa: E731
    else:
        g = vgraph.GraphWrapper(f, cuda, mode, capture_sizes=sizes)
        ref_fn = f
    gen = torch.Generator(device="cuda").manual_seed(1)
    for n in (8, 5, 16, 9, 5, 32, 40):  # hit, pad, hit, pad, replay, hit, exceed
        for _ in range(2):  # the eager first call of a bucket, then graphs
            x = torch.randn(n, 64, device="cuda", generator=gen)
            y = g(x)
            torch.cuda.synchronize()
            assert y.shape == x.shape
            assert torch.allclose(y, ref_fn(x), rtol=1e-4, atol=1e-5), (mode, n, g.last_run)
    rows, total = g.stats()
    assert total["captures"] >= 3 and total["replays"] >= 3
    assert g.last_run["bucket"] == -1  # 40 tokens: above the largest size, eager
    g.close()


def test_graph_wrapper_output_lives_in_its_pool(cuda):
    f = _mlp(2)
    g = vgraph.GraphWrapper(f, cuda, "full", capture_sizes=[16])
    x = torch.randn(10, 64, device="cuda")
    g(x)
    y1 = g(x).clone()  # captured now
    y2 = g(x)          # replayed
    torch.cuda.synchronize()
    assert g.last_run["path"] == "full" and torch.equal(y1, y2)
    x2 = torch.randn(10, 64, device="cuda")
    assert torch.allclose(g(x2), f(x2), rtol=1e-4, atol=1e-5)  # new inputs, same graph


def test_graph_wrapper_refuses_moving_a_captured_input(cuda):
    g = vgraph.GraphWrapper(lambda x: x * 2, cuda, "full", capture_sizes=[8])
    for _ in range(3):
        g(torch.ones(5, 4, device="cuda"))
    with pytest.raises(ValueError):
        g(torch.ones(5, 6, device="cuda"))


def _count_general(g):
    """Counts the calls that go through vg_runner_run (the rest take the replay path)."""
    calls = []
    run = g._run

    def counted(*a):
        calls.append(1)
        return run(*a)
    g._run = counted
    return calls


@pytest.mark.parametrize("where", ["default stream", "side stream"])
def test_graph_wrapper_replay_path(cuda, where):
    """After a bucket's graph replayed once through the runner, calls of the same descriptor take
    vg_runner_replay (inputs copied, padded and the graph launched in one C call): exact on new
    inputs, with torch's default stream (the wrapper's side stream and events) or a stream of the
    caller's (the runner on it)."""
    import contextlib
    f = _mlp(3)
    side = torch.cuda.Stream() if where == "side stream" else None
    with torch.cuda.stream(side) if side is not None else contextlib.nullcontext():
        g = vgraph.GraphWrapper(f, cuda, "full", capture_sizes=[8, 16])
        general = _count_general(g)
        gen = torch.Generator(device="cuda").manual_seed(5)
        # calls through the runner of 4 per size: a new bucket's eager+capture call and its first
        # replay; one replay for a new size in a captured bucket; every call above the sizes
        want = {8: 2, 5: 1, 16: 2, 11: 1, 20: 4}
        for n in (8, 5, 16, 11, 20):
            before = len(general)
            for _ in range(4):
                x = torch.randn(n, 64, device="cuda", generator=gen)
                y = g(x)
                assert y.shape == x.shape and torch.allclose(y, f(x), rtol=1e-4, atol=1e-5), (n, g.last_run)
            assert len(general) - before == want[n], (n, len(general) - before)
            assert g.last_run["path"] == ("full" if n <= 16 else "eager")
        s2 = torch.cuda.Stream()  # another stream: captured anew there, still exact
        s2.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s2):
            for _ in range(3):
                x = torch.randn(5, 64, device="cuda", generator=gen)
                assert torch.allclose(g(x), f(x), rtol=1e-4, atol=1e-5)
        torch.cuda.current_stream().wait_stream(s2)
        x = torch.randn(5, 64, device="cuda", generator=gen)
        assert torch.allclose(g(x), f(x), rtol=1e-4, atol=1e-5)
    torch.cuda.synchronize()
    g.close()


def test_language_model_on_cuda_matches_the_stub():
    prompts = [[1, 2, 3, 4, 5], list(range(10, 40)), [7]]
    outs = []
    for backend in ("cuda", "kunlun_stub"):
        with vgraph.Runtime(backend) as rt:
            lm = vgraph.LanguageModel(rt, DATA / "qwen2_tiny" / "model", num_blocks=64, max_seqs=4)
            outs.append(lm.generate(prompts, 6))
    # the first tokens of a random tiny model rarely sit on a near-tie: they must agree
    assert [o[:2] for o in outs[0]] == [o[:2] for o in outs[1]]
