# SPDX-License-Identifier: Apache-2.0
"""GraphWrapper's replay path (vg_runner_replay: the inputs copied, padded and the graph launched
in one C call, no Python callback) on kunlun_stub, where graphs really replay: the wrapped callable
enqueues only vg's own work (foreign=False, vg_op_axpby on the wrapper's stream), which the stub
captures. Results must stay exact on new inputs for hit, padded and eager calls, and inputs the
replay path cannot take must go through vg_runner_run with its errors."""
import ctypes

import numpy as np
import pytest

import vgraph
from vgraph._lib import libvg

SIZES = [4, 8, 16]


def _axpby():
    fn = libvg().vg_op_axpby
    fn.restype = ctypes.c_int
    fn.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_float, ctypes.c_void_p, ctypes.c_float,
                   ctypes.c_void_p]
    return fn


def _wrapper(rt, **kw):
    """y = 2 x + z, enqueued as vg's work on the wrapper's stream; counts the calls that went
    through vg_runner_run (the general path) in g.general."""
    op = _axpby()

    def f(x, z=None):
        y = np.zeros_like(x)
        assert op(g.stream.handle, x.size, 2.0, x.ctypes.data, 0.0, y.ctypes.data) == 0, libvg().vg_last_error()
        if z is not None:
            assert op(g.stream.handle, z.size, 1.0, z.ctypes.data, 1.0, y.ctypes.data) == 0
        return y

    g = vgraph.GraphWrapper(f, rt, kw.pop("mode", "full"), capture_sizes=SIZES, foreign=False, **kw)
    g.general = 0
    run = g._run

    def counted(*a):
        g.general += 1
        return run(*a)
    g._run = counted
    return g


def test_replays_exact_on_new_inputs_for_hit_pad_and_exceed(stub):
    g = _wrapper(stub)
    rng = np.random.default_rng(0)
    # calls through vg_runner_run, of 4 per size: a new bucket's first call runs eagerly and captures,
    # its second replays through the runner; later calls of that descriptor take the replay path
    general = {4: 2, 3: 1, 9: 2, 16: 1, 17: 4, 40: 4}
    for k, n in enumerate((4, 3, 9, 16, 17, 40, 3, 4)):
        before = g.general
        for rep in range(4):
            x = rng.standard_normal((n, 8)).astype(np.float32)
            y = g(x)
            assert y.shape == (n, 8) and np.array_equal(y, 2 * x), (n, rep, g.last_run)
        bucketed = n <= SIZES[-1]
        want_path = "full" if bucketed else "eager"
        assert g.last_run["path"] == want_path and g.last_run["padded_tokens"] == (min(s for s in SIZES if s >= n) if bucketed else n)
        assert g.general - before == (general[n] if k < 6 else 0), (n, g.general - before)
    rows, total = g.stats()
    assert total["hits"] == 8 * 4 and total["replays"] == 6 * 4 - 2 and total["eager_runs"] == 2 + 2 * 4
    assert total["padded_tokens"] == 4 * ((4 - 3) * 2 + (16 - 9))


def test_replay_path_serves_calls_without_the_runner_callbacks(stub):
    g = _wrapper(stub)
    x = np.ones((3, 8), np.float32)
    for _ in range(3):  # eager first and captured, replayed through vg_runner_run, replay path
        g(x)
    assert g.general == 2
    rng = np.random.default_rng(1)
    for _ in range(20):
        x = rng.standard_normal((3, 8)).astype(np.float32)
        y = g(x)
        assert np.array_equal(y, 2 * x)
    assert g.general == 2  # every one of the 20 in one C call
    assert g.last_run == {**g.last_run, "bucket": 0, "padded_tokens": 4, "path": "full", "graph_launches": 1,
                          "eager_pieces": 0, "captures": 0}
    # the padding row of the static input was zeroed: the static output's row 3 is 2 * 0
    g(np.full((4, 8), 7, np.float32))
    y = g(np.ones((3, 8), np.float32))
    assert (y.base[3] == 0).all() and (y == 2).all()
    rows, total = g.stats()
    assert rows[0]["hits"] == 25 and rows[0]["padded_tokens"] == 24


def test_keyword_inputs_and_descriptor(stub):
    g = _wrapper(stub)
    rng = np.random.default_rng(2)
    bd = vgraph.BatchDescriptor(num_tokens=5, num_requests=2, uniform=True)
    for _ in range(6):
        x, z = (rng.standard_normal((5, 8)).astype(np.float32) for _ in range(2))
        assert np.array_equal(g(x, z=z, batch_descriptor=bd), 2 * x + z)
    assert g.general == 2
    other = vgraph.BatchDescriptor(num_tokens=5, variant=1)  # another key: its own graph
    for _ in range(3):
        x, z = (rng.standard_normal((5, 8)).astype(np.float32) for _ in range(2))
        assert np.array_equal(g(x, z=z, batch_descriptor=other), 2 * x + z)
    assert g.general == 4


def test_inputs_the_replay_path_cannot_take_go_through_the_runner(stub):
    g = _wrapper(stub)
    x = np.ones((3, 8), np.float32)
    for _ in range(4):
        g(x)
    n = g.general
    wide = np.arange(3 * 16, dtype=np.float32).reshape(3, 16)
    strided = wide[:, ::2]  # same shape and dtype, not contiguous: copied by the general path
    assert np.array_equal(g(strided), 2 * strided) and g.general == n + 1
    ro = np.arange(24, dtype=np.float32).reshape(3, 8)
    ro.flags.writeable = False  # read-only: still readable in place
    assert np.array_equal(g(ro), 2 * ro) and g.general == n + 1
    with pytest.raises(ValueError, match="changed from"):  # the graph reads a (4, 8) float32 buffer
        g(np.ones((3, 8), np.float64))
    with pytest.raises(ValueError, match="changed from"):
        g(np.ones((3, 5), np.float32))
    with pytest.raises(vgraph.VgError) as e:
        g(np.ones((0, 8), np.float32))
    assert e.value.status_name == "VG_ERR_INVALID_ARG" and "num_tokens" in e.value.message
    assert np.array_equal(g(x), 2 * x)  # the replay path again


def test_vg_errors_of_the_replay_call_are_raised_with_vg_message(stub):
    g = _wrapper(stub)
    x = np.ones((3, 8), np.float32)
    for _ in range(4):
        g(x)
    ent = next(iter(g._replays.values()))
    ent.inputs[0].dst_bytes = 8  # as if the static buffer were too small for the bucket
    with pytest.raises(vgraph.VgError) as e:
        g(x)
    assert e.value.status_name == "VG_ERR_INVALID_ARG" and "needs 4 rows" in e.value.message


def test_invalidate_and_budget_send_calls_back_through_the_runner(stub):
    g = _wrapper(stub)
    rng = np.random.default_rng(3)
    for _ in range(4):
        g(rng.standard_normal((6, 8)).astype(np.float32))
    n = g.general
    g.invalidate()  # the graph is stale: recaptured through vg_runner_run, then replayed again
    for _ in range(3):
        x = rng.standard_normal((6, 8)).astype(np.float32)
        assert np.array_equal(g(x), 2 * x)
    assert g.general == n + 1
    _, total = g.stats()
    assert total["captures"] == 2


def test_foreign_work_never_takes_the_replay_path_on_the_stub(stub):
    calls = []

    def f(x):
        calls.append(x.shape[0])
        return x * 2
    g = vgraph.GraphWrapper(f, stub, "full", capture_sizes=SIZES)
    assert g.last_run is None
    for _ in range(5):
        assert np.array_equal(g(np.ones((3, 2), np.float32)), np.full((3, 2), 2, np.float32))
    assert calls == [4] * 5 and not g._replays and g.last_run["path"] == "eager"


def test_a_recapture_refreshes_every_descriptor_of_the_bucket(stub):
    """Sizes 3 and 4 share bucket 4; after invalidate() the call of 3 recaptures the graph, which
    writes new static outputs: the call of 4 must return those, not the old ones."""
    g = _wrapper(stub)
    rng = np.random.default_rng(4)
    for n in (3, 4):
        for _ in range(3):
            g(rng.standard_normal((n, 8)).astype(np.float32))
    g.invalidate()
    for n in (3, 4, 3, 4):
        x = rng.standard_normal((n, 8)).astype(np.float32)
        assert np.array_equal(g(x), 2 * x), n
