# SPDX-License-Identifier: Apache-2.0
"""Arrays cross both ways without copies (NumPy here; torch on the GPU machine)."""
import gc

import numpy as np
import pytest

import vgraph
from vgraph import dlpack as D
from vgraph._native import Imported


def test_numpy_in_and_out_same_memory():
    a = np.arange(24, dtype=np.float32).reshape(4, 6)
    t = vgraph.from_dlpack(a)
    assert t.data_ptr == a.ctypes.data and t.shape == (4, 6) and t.dtype == "float32"
    assert t.device == (D.CPU, 0) and t.is_contiguous()
    b = np.from_dlpack(t)
    assert b.ctypes.data == a.ctypes.data
    a[1, 2] = -5  # one memory: the change shows through both
    assert b[1, 2] == -5 and t.numpy()[1, 2] == -5


def test_strided_views_keep_their_strides():
    a = np.arange(24, dtype=np.int64).reshape(4, 6)[:, ::2]
    t = vgraph.from_dlpack(a)
    assert t.strides == (6, 2) and not t.is_contiguous()
    assert np.array_equal(np.from_dlpack(t), a)


def test_read_only_stays_read_only():
    a = np.arange(4, dtype=np.float32)
    a.flags.writeable = False
    t = vgraph.from_dlpack(a)
    assert t.readonly
    assert not np.from_dlpack(t).flags.writeable  # DLPack 1.0 carries the flag
    with pytest.raises(BufferError):  # DLPack 0.x cannot: refused, as NumPy refuses it
        t.__dlpack__()
    assert vgraph.from_dlpack(t.__dlpack__(max_version=(1, 0))).readonly


def test_inconsistent_tensor_refused():
    a = np.arange(4, dtype=np.float32)
    for kw in ({"shape": (2, 2), "strides": (2,)}, {"shape": (4,), "strides": (1, 1)}, {"shape": (-3,)},
               {"shape": (2**64,)}):
        with pytest.raises(vgraph.VgError) as e:
            vgraph.Tensor(a.ctypes.data, dtype="float32", owner=a, **kw)
        assert e.value.status_name == "VG_ERR_INVALID_ARG"


@pytest.mark.parametrize("versioned", [True, False])
def test_exported_capsules_are_released(versioned):
    t = vgraph.from_dlpack(np.ones(3, np.float32))
    before = len(D._live)
    cap = t.__dlpack__(max_version=(1, 0) if versioned else None)
    assert len(D._live) == before + 1
    del cap  # never consumed: the capsule's destructor calls the deleter
    gc.collect()
    assert len(D._live) == before
    b = np.from_dlpack(t)  # consumed: released when the consumer is done
    del b
    gc.collect()
    assert len(D._live) == before


def test_unsupported_dtype_refused():
    with pytest.raises(vgraph.VgError) as e:
        vgraph.from_dlpack(np.ones(2, np.complex64))
    assert e.value.status_name == "VG_ERR_UNSUPPORTED"


def test_not_an_array_refused():
    with pytest.raises(vgraph.VgError) as e:
        vgraph.from_dlpack(object())
    assert e.value.status_name == "VG_ERR_INVALID_ARG"


def test_vg_imports_host_arrays_on_the_stub(stub):
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    with Imported(stub, a) as imp:
        assert imp.ptr == a.ctypes.data and imp.shape == (3, 4) and imp.strides == (4, 1)


def test_vg_refuses_what_it_cannot_use(stub):
    with pytest.raises(vgraph.VgError) as e:
        Imported(stub, np.ones((2, 2), np.float64))
    assert e.value.status_name == "VG_ERR_INVALID_ARG"


def test_host_arrays_refused_on_opencl(runtime, backend):
    if backend != "opencl":
        pytest.skip("the stub's device memory is host memory")
    with pytest.raises(vgraph.VgError) as e:  # kDLCPU is not this runtime's kDLOpenCL device
        Imported(runtime, np.ones((2, 2), np.float32))
    assert e.value.status_name == "VG_ERR_INVALID_ARG"
