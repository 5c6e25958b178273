# SPDX-License-Identifier: Apache-2.0
"""GraphWrapper in vLLM's place: the class a vLLM platform plugin returns from
`get_static_graph_wrapper_cls()`. vLLM builds it as `cls(runnable, vllm_config, runtime_mode,
cudagraph_options=None)` and calls it like the runnable; the batch descriptor and the runtime mode
of each call come from vLLM's forward context, as for vLLM's own CUDAGraphWrapper: a call whose
runtime mode is NONE or another mode than the wrapper's runs the runnable as it is. vLLM pads its
inputs to the capture size itself, so vg's padding has nothing left to do here.

vLLM is imported only when a wrapper is called; vgraph does not depend on it."""
import threading

from .graph import BatchDescriptor, CUDAGraphMode, GraphWrapper

_runtime = None
_runtime_lock = threading.Lock()


def shared_runtime():
    """One vgraph.Runtime per process for the wrappers (vg's cuda backend on torch's device,
    unless VG_BACKEND names another)."""
    global _runtime
    with _runtime_lock:
        if _runtime is None:
            import os
            from .runtime import Runtime
            backend = os.environ.get("VG_BACKEND") or "cuda"
            device = -1
            if backend == "cuda":
                import torch
                device = torch.cuda.current_device()
            _runtime = Runtime(backend, device=device)
        return _runtime


def _mode(mode):
    """vLLM's CUDAGraphMode (or a name, or ours) as ours."""
    if isinstance(mode, CUDAGraphMode):
        return mode
    name = mode if isinstance(mode, str) else getattr(mode, "name", str(mode))
    return CUDAGraphMode[name.upper()]


def _descriptor(bd):
    """vLLM's BatchDescriptor (num_tokens, uniform_decode, has_lora, num_reqs) as vg's key."""
    variant = 1 if getattr(bd, "has_lora", False) else 0
    return BatchDescriptor(num_tokens=int(bd.num_tokens), num_requests=int(getattr(bd, "num_reqs", 0) or 0),
                           uniform=bool(getattr(bd, "uniform_decode", False)), variant=variant)


class VgCUDAGraphWrapper:
    """vLLM's CUDAGraphWrapper interface over vgraph.GraphWrapper."""

    def __init__(self, runnable, vllm_config, runtime_mode, cudagraph_options=None, runtime=None):
        self.runnable = runnable
        self.vllm_config = vllm_config
        self.runtime_mode = _mode(runtime_mode)
        cc = getattr(vllm_config, "compilation_config", None)
        sizes = sorted(set(getattr(cc, "cudagraph_capture_sizes", None) or [])) or None
        max_size = getattr(cc, "max_cudagraph_capture_size", None) or (sizes[-1] if sizes else 0)
        self._wrapper = GraphWrapper(runnable, runtime or shared_runtime(), self.runtime_mode,
                                     capture_sizes=sizes, max_capture_size=max_size)

    def __getattr__(self, name):  # the runnable's attributes, as vLLM's wrapper offers them
        if name in ("runnable", "_wrapper"):
            raise AttributeError(name)
        return getattr(self.runnable, name)

    def unwrap(self):
        return self.runnable

    @property
    def graph_wrapper(self):
        return self._wrapper

    def __call__(self, *args, **kwargs):
        from vllm.forward_context import get_forward_context
        ctx = get_forward_context()
        mode = getattr(ctx, "cudagraph_runtime_mode", None)
        bd = getattr(ctx, "batch_descriptor", None)
        if bd is None or mode is None or _mode(mode) != self.runtime_mode or self.runtime_mode == CUDAGraphMode.NONE:
            return self.runnable(*args, **kwargs)
        return self._wrapper(*args, batch_descriptor=_descriptor(bd), **kwargs)
