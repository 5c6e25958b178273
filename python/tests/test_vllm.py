# SPDX-License-Identifier: Apache-2.0
"""vgraph.vllm.VgCUDAGraphWrapper as vLLM drives it, with a stand-in for vLLM's forward context
(vLLM is not installed in CI): the batch descriptor and runtime mode of each call come from it."""
import enum
import sys
import types

import numpy as np
import pytest

from vgraph.vllm import VgCUDAGraphWrapper


class VllmMode(enum.Enum):  # vLLM's CUDAGraphMode names
    NONE = 0
    PIECEWISE = 1
    FULL = 2


class Ctx:
    batch_descriptor = None
    cudagraph_runtime_mode = None


@pytest.fixture
def ctx(monkeypatch):
    c = Ctx()
    fc = types.ModuleType("vllm.forward_context")
    fc.get_forward_context = lambda: c
    monkeypatch.setitem(sys.modules, "vllm", types.ModuleType("vllm"))
    monkeypatch.setitem(sys.modules, "vllm.forward_context", fc)
    return c


def test_calls_follow_the_forward_context(stub, ctx):
    seen = []

    def forward(x):
        seen.append(x.shape[0])
        return x * 2

    cfg = types.SimpleNamespace(compilation_config=types.SimpleNamespace(cudagraph_capture_sizes=[16, 8, 4],
                                                                          max_cudagraph_capture_size=16))
    w = VgCUDAGraphWrapper(forward, cfg, VllmMode.FULL, runtime=stub)
    assert w.unwrap() is forward and w.graph_wrapper.capture_sizes() == [4, 8, 16]
    x = np.ones((8, 2), np.float32)  # vLLM pads to the capture size before the call
    ctx.batch_descriptor = types.SimpleNamespace(num_tokens=8, uniform_decode=True, has_lora=False, num_reqs=8)
    ctx.cudagraph_runtime_mode = VllmMode.FULL
    assert (w(x) == 2).all() and w.graph_wrapper.last_run["bucket"] == 1
    ctx.cudagraph_runtime_mode = VllmMode.NONE  # vLLM says eager: the runnable alone
    hits = w.graph_wrapper.stats()[1]["hits"]
    assert (w(x) == 2).all() and w.graph_wrapper.stats()[1]["hits"] == hits
    ctx.cudagraph_runtime_mode = VllmMode.PIECEWISE  # another wrapper's mode: not ours
    w(x)
    assert w.graph_wrapper.stats()[1]["hits"] == hits
    assert seen == [8, 8, 8]
