# SPDX-License-Identifier: Apache-2.0
"""GraphWrapper with NumPy on the CPU backends: bucketing, padding, threshold, modes, pieces,
statistics, errors and the once-only eager notice. (Capture of torch work: tests/gpu.)"""
import warnings

import numpy as np
import pytest

import vgraph
from vgraph import BatchDescriptor, CUDAGraphMode, GraphWrapper, Piece

SIZES = [4, 8, 16]


def _layer(seen):
    w = np.random.default_rng(0).standard_normal((8, 8)).astype(np.float32)

    def f(x, scale=1.0):
        seen.append(x.shape[0])
        return np.tanh(x @ w) * scale, x.shape[0]
    return f


@pytest.mark.parametrize("mode", list(CUDAGraphMode))
def test_results_equal_eager_for_hit_pad_and_exceed(runtime, mode):
    seen = []
    f = _layer(seen)
    g = GraphWrapper(f, runtime, mode, capture_sizes=SIZES)
    rng = np.random.default_rng(1)
    for n in (4, 3, 9, 16, 17, 40):
        x = rng.standard_normal((n, 8)).astype(np.float32)
        y, rows = g(x, scale=0.5)
        ref, _ = f(x, 0.5)
        assert y.shape == (n, 8) and np.allclose(y, ref, rtol=1e-5, atol=1e-6)  # BLAS may block a padded batch differently
        bucketed = mode != CUDAGraphMode.NONE and n <= SIZES[-1]
        padded = min(s for s in SIZES if s >= n) if bucketed else n
        assert rows == padded  # the callable saw the padded batch
        assert g.last_run["padded_tokens"] == padded and g.last_run["path"] == "eager"
    rows, total = g.stats()
    assert total["hits"] == 6
    if mode != CUDAGraphMode.NONE:
        assert total["padded_tokens"] == (4 - 3) + (16 - 9)
    g.close()


def test_padding_rows_are_zero_and_inputs_untouched(stub):
    got = {}

    def f(x, bias):
        got["x"] = x.copy()
        return x + bias

    g = GraphWrapper(f, stub, "full", capture_sizes=[8])
    x = np.ones((5, 3), np.float32)
    bias = np.full(3, 2, np.float32)  # not token-indexed: passed as it is
    y = g(x, bias)
    assert got["x"].shape == (8, 3) and (got["x"][5:] == 0).all() and (got["x"][:5] == 1).all()
    assert y.shape == (5, 3) and (y == 3).all() and (x == 1).all()


def test_batch_descriptor_decides_the_bucket(stub):
    g = GraphWrapper(lambda x: x * 2, stub, capture_sizes=[4, 8])
    x = np.arange(6, dtype=np.float32).reshape(6, 1)  # 6 rows, but the descriptor says 3 tokens
    y = g(x, batch_descriptor=BatchDescriptor(num_tokens=3, uniform=True))
    assert g.last_run["padded_tokens"] == 4 and g.last_run["bucket"] == 0
    assert y.shape == (6, 1)  # only token-indexed arrays (3 rows) are padded and cut
    with pytest.raises(vgraph.VgError):
        g(x, batch_descriptor=BatchDescriptor(num_tokens=0))
    for bad in ({"num_tokens": 2**64 + 3}, {"num_tokens": 2.5}, {"num_tokens": 3, "variant": -1},
                {"num_tokens": 3, "num_requests": 2**31}):
        with pytest.raises(vgraph.VgError):  # a width vg_batch_desc cannot hold
            BatchDescriptor(**bad)
    with pytest.raises(vgraph.VgError):
        g(3)  # no array to count tokens in


def test_pieces_chain_with_splitting_ops(runtime):
    g = GraphWrapper(pieces=[lambda x: x + 1, Piece(lambda x: x * 3, splitting=True, name="attn"), lambda x: x - 2],
                     runtime=runtime, runtime_mode="piecewise", capture_sizes=[4])
    y = g(np.ones((3, 2), np.float32))
    assert (y == 4).all() and y.shape == (3, 2)
    assert g.last_run["eager_pieces"] == 3


def test_threshold_and_capture_sizes(stub):
    g = GraphWrapper(lambda x: x, stub, capture_sizes=[2, 4, 8], max_capture_size=4)
    g(np.zeros((1, 1)))
    assert g.capture_sizes()[:2] == [2, 4]
    g(np.zeros((6, 1)))
    assert g.last_run["bucket"] == -1 and g.last_run["padded_tokens"] == 6
    assert len(vgraph.default_capture_sizes()) > 0


def test_errors_of_the_callable_propagate(stub):
    def bad(x):
        raise KeyError("boom")

    g = GraphWrapper(bad, stub, capture_sizes=[4])
    with pytest.raises(KeyError):
        g(np.zeros((2, 2)))
    with pytest.raises(vgraph.VgError):
        GraphWrapper(runtime=stub)  # neither a runnable nor pieces


def test_eager_notice_said_once(stub):
    from vgraph import graph
    graph._warned_backends.discard(stub.backend)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        for _ in range(3):
            GraphWrapper(lambda x: x, stub, capture_sizes=[4])(np.zeros((2, 2)))
    notes = [x for x in w if "does not capture work" in str(x.message)]
    assert len(notes) == 1 and issubclass(notes[0].category, RuntimeWarning)


def test_mode_after_downgrade(stub):
    g = GraphWrapper(lambda x: x, stub, "full", capture_sizes=[4])
    g(np.zeros((2, 2)))
    assert g.mode == "piecewise"  # the callable's work cannot be captured here: vg says so


def test_token_args_name_what_is_padded(stub):
    got = {}

    def f(x, cache):
        got["shapes"] = (x.shape[0], cache.shape[0])
        return x

    cache = np.zeros((3, 2), np.float32)  # as many rows as the call has tokens, by chance
    g = GraphWrapper(f, stub, capture_sizes=[4], token_args=[0])
    g(np.ones((3, 2), np.float32), cache)
    assert got["shapes"] == (4, 3)
    g = GraphWrapper(f, stub, capture_sizes=[4])  # the default pads both
    g(np.ones((3, 2), np.float32), cache)
    assert got["shapes"] == (4, 4)


def test_changing_row_shapes_get_new_static_buffers(stub):
    g = GraphWrapper(lambda x: x.sum(axis=1), stub, capture_sizes=[4])
    assert g(np.ones((3, 2), np.float32)).tolist() == [2, 2, 2]
    assert g(np.ones((3, 5), np.float32)).tolist() == [5, 5, 5]  # nothing captured here: re-made


class _EmulatedGraphs:
    """Drives GraphWrapper's callbacks in the order vg's runner calls them for a PIECEWISE forward
    [graphed, splitting, graphed] with eager_first, where capture records each graphed piece and a
    replay recomputes it from the same input arrays into the same output arrays (what a CUDA graph
    does). The CPU backends cannot capture Python work: this checks the wrapper's bookkeeping of
    static inputs and outputs that the GPU relies on."""

    def __init__(self, g, monkeypatch):
        import ctypes
        from vgraph import _types as T
        from vgraph import graph as G
        self.g, self.T, self.ctypes = g, T, ctypes
        self.capturing = False
        self.graphs = {}
        real = G.libvg()

        class Proxy:
            def __getattr__(_, name):
                if name == "vg_stream_is_capturing":
                    return lambda s: int(self.capturing)
                return getattr(real, name)
        monkeypatch.setattr(G, "libvg", lambda: Proxy())

        def captured(st, call):
            out = call()
            self.graphs.setdefault(self.key, []).append((call, out))
            return out
        monkeypatch.setattr(g, "_captured", captured)

    def call(self, x):
        T, ctypes, g = self.T, self.ctypes, self.g
        n = x.shape[0]
        pn = g.capture_sizes()[g.capture_sizes().index(min(s for s in g.capture_sizes() if s >= n))]
        real, padded = T.BatchDesc(n), T.BatchDesc(pn)
        self.key = pn
        g._call = {"real_args": (x,), "real_kwargs": {}}
        g._error = None
        assert g._prepare(None, g._runner, ctypes.pointer(real), ctypes.pointer(padded), None, None) == 0, g._error
        pieces = g._pieces_c

        def run(i):
            assert g._run_piece(None, g._runner, ctypes.pointer(pieces[i]), ctypes.pointer(padded), 1) == 0, g._error
        first = self.key not in self.graphs
        for seg in ([0], [1], [2]):
            i = seg[0]
            if g.pieces[i].splitting:
                run(i)
            elif first:  # eager_first: served eagerly, then captured
                run(i)
                self.capturing = True
                run(i)
                self.capturing = False
            else:  # replay: the recorded piece, same arrays in and out
                call, out = self.graphs[self.key][i // 2]
                out[...] = call()
        c = g._call
        out = c["current"][2] if 2 in c["current"] else c["static"]["out"][2]
        g._call = None
        return out[:n]


def test_static_buffers_carry_graphs_across_calls(stub, monkeypatch):
    w = np.random.default_rng(3).standard_normal((4, 4)).astype(np.float32)
    f0, f1, f2 = (lambda x: x @ w), (lambda x: np.sin(x)), (lambda x: x * 3 + 1)
    g = GraphWrapper(pieces=[f0, Piece(f1, splitting=True), f2], runtime=stub, runtime_mode="piecewise",
                     capture_sizes=[4, 8])
    g(np.zeros((2, 4), np.float32))  # builds the runner (eagerly, as the stub must)
    g._capturable = True             # from here on: as on a device that captures Python's work
    g._static = {}
    em = _EmulatedGraphs(g, monkeypatch)
    rng = np.random.default_rng(4)
    for n in (3, 4, 2, 7, 5, 3):     # first calls of buckets 4 and 8, then replays with new data
        x = rng.standard_normal((n, 4)).astype(np.float32)
        assert np.allclose(em.call(x), f2(f1(f0(x))), rtol=1e-5, atol=1e-6), n
    assert sorted(em.graphs) == [4, 8] and all(len(v) == 2 for v in em.graphs.values())
