# SPDX-License-Identifier: Apache-2.0
"""Shared fixtures: the repository's test data and a runtime per CPU backend (kunlun_stub, and
opencl where PoCL or another OpenCL device is there)."""
import pathlib

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]
DATA = REPO / "tests" / "data"
CPU_BACKENDS = ["kunlun_stub", "opencl"]


def pytest_report_header(config):
    import vgraph
    usable = [r.request for r in vgraph.backends(usable_only=True)]
    return f"vgraph: libvg ABI {vgraph.version()}, usable backends: {usable}"


def _usable(name):
    import vgraph
    return vgraph.probe(name).usable


@pytest.fixture(scope="session", params=CPU_BACKENDS)
def backend(request):
    # opencl is built wherever its headers are (CI installs PoCL): its absence is a skip only when
    # the plugin was not built at all, never a silent pass of a broken one
    if request.param == "opencl" and not _usable("opencl"):
        pytest.skip("no usable opencl backend here")
    return request.param


@pytest.fixture(scope="session")
def runtime(backend):
    import vgraph
    rt = vgraph.Runtime(backend)
    yield rt
    rt.close()


@pytest.fixture(scope="session")
def stub():
    import vgraph
    rt = vgraph.Runtime("kunlun_stub")
    yield rt
    rt.close()


def load(path):
    import vgraph
    return vgraph.safetensors.load(str(path))


def rel_err(out, ref):
    import numpy as np
    return float(np.abs(np.asarray(out, dtype=np.float64) - ref).max() / np.abs(ref).max())
