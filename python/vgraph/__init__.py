# SPDX-License-Identifier: Apache-2.0
"""vgraph: vg's portable GPU graphs from Python (docs/python.md).

Runtime (backends, devices, capabilities, options), the models (VisionEncoder, LanguageModel),
GraphWrapper (vg's runner around PyTorch or NumPy code) and zero-copy DLPack exchange, all
through vg's public C headers with ctypes."""
from ._errors import VgError
from .dlpack import Tensor, from_dlpack
from .graph import BatchDescriptor, CUDAGraphMode, GraphWrapper, Piece, default_capture_sizes
from .lm import LanguageModel, StepOutput
from .runtime import Runtime, BackendReport, backends, backend_candidates, builtin_backends, probe, selected_backend, version
from .vit import VisionEncoder, VisionOutput
from ._native import Stream, native_device, option_names
from . import safetensors

__version__ = "0.1.0"

__all__ = ["VgError", "Tensor", "from_dlpack", "BatchDescriptor", "CUDAGraphMode", "GraphWrapper", "Piece",
           "default_capture_sizes", "LanguageModel", "StepOutput", "Runtime", "BackendReport", "backends",
           "backend_candidates", "builtin_backends", "probe", "selected_backend", "version", "VisionEncoder", "VisionOutput",
           "Stream", "native_device", "option_names", "safetensors"]
