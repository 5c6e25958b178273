# SPDX-License-Identifier: Apache-2.0
"""The runtime: backends, devices, capabilities, selection, options, errors."""
import ctypes

import pytest

import vgraph


def test_builtin_backends_and_candidates():
    names = vgraph.builtin_backends()
    assert "kunlun_stub" in names and "cuda" in names
    assert vgraph.backend_candidates()[: len(names)] == names


def test_probe_reports_devices_and_failures():
    r = vgraph.probe("kunlun_stub")
    assert r.usable and r.loaded and r.devices and r.devices[0]["mem_total"] > 0
    bad = vgraph.probe("no_such_backend")
    assert not bad.usable and "no_such_backend" in bad.error


def test_runtime_open(runtime, backend):
    assert runtime.backend == backend
    assert runtime.plugin_path.endswith(f"libvg_{backend}.so")
    info = runtime.device_info()
    assert info["mem_total"] > 0 and info["name"]
    # graphs of these backends record only their own launches
    assert runtime.captures_foreign_work is False


def test_selection_by_environment_and_argument(monkeypatch):
    monkeypatch.setenv("VG_BACKEND", "kunlun_stub")
    with vgraph.Runtime() as rt:
        assert rt.backend == "kunlun_stub"
    monkeypatch.setenv("VG_BACKEND", "no_such_backend")
    with pytest.raises(vgraph.VgError):
        vgraph.Runtime()
    with vgraph.Runtime("kunlun_stub") as rt:  # the argument wins over the environment
        assert rt.backend == "kunlun_stub"
    assert vgraph.selected_backend("kunlun_stub") == "kunlun_stub"
    monkeypatch.setenv("VG_BACKEND", "kunlun_stub")
    assert vgraph.selected_backend() == "kunlun_stub"


def test_error_carries_status_and_message():
    with pytest.raises(vgraph.VgError) as e:
        vgraph.Runtime("no_such_backend")
    assert e.value.status_name == "VG_ERR_NOT_FOUND" and e.value.status == 3
    assert "no_such_backend" in e.value.message
    assert str(e.value).startswith("VG_ERR_NOT_FOUND: ")


def test_options_known_and_unknown():
    with vgraph.Runtime("kunlun_stub") as rt:
        names = vgraph.option_names(rt)
    assert "VG_STUB_DEVICES" in names
    with vgraph.Runtime("kunlun_stub", options={"VG_STUB_LAUNCH_US": "0"}) as rt:
        assert rt.backend == "kunlun_stub"
    with pytest.raises(vgraph.VgError) as e:
        vgraph.Runtime("kunlun_stub", options={"VG_NO_SUCH_KNOB": "1"})
    assert e.value.status_name == "VG_ERR_INVALID_ARG" and "VG_NO_SUCH_KNOB" in e.value.message


def test_native_device_of_the_stub(stub):
    d = vgraph.native_device(stub)
    assert d["api"] == "host" and d["ordinal"] == 0
    assert "native" in stub.caps and "foreign_capture" not in stub.caps


def test_device_index_out_of_range_refused():
    with pytest.raises(vgraph.VgError) as e:  # not wrapped to device 0
        vgraph.Runtime("kunlun_stub", device=2**32)
    assert e.value.status_name == "VG_ERR_INVALID_ARG"
    import numpy as np
    with vgraph.Runtime("kunlun_stub", device=np.float32(0)) as rt:  # a whole number of any kind
        assert rt.backend == "kunlun_stub"


def test_closed_runtime_refuses():
    rt = vgraph.Runtime("kunlun_stub")
    rt.close()
    rt.close()  # twice is fine
    with pytest.raises(vgraph.VgError) as e:
        rt.device_info()
    assert e.value.status_name == "VG_ERR_STATE"


def test_native_device_of_the_runtime(runtime, backend):
    d = vgraph.native_device(runtime)
    assert d["api"] == {"kunlun_stub": "host", "opencl": "opencl"}[backend]
    if backend == "opencl":  # the cl_platform_id, cl_device_id and cl_context behind vg's device
        assert d["platform"] and d["device"] and d["context"]


def test_close_frees_what_was_built_on_it():
    import numpy as np
    rt = vgraph.Runtime("kunlun_stub")
    g = vgraph.GraphWrapper(lambda x: x, rt, capture_sizes=[4])
    g(np.zeros((2, 1)))
    enc = vgraph.VisionEncoder.synthetic(rt, "qwen2.5-vl-tiny")
    rt.close()  # the encoder and the wrapper go first, then the device
    with pytest.raises(vgraph.VgError):
        enc.encode(np.zeros((4, enc.info["patch_dim"]), np.float32), [[1, 2, 2]])


def test_objects_outliving_their_runtime_refuse():
    """What the runtime's close freed (a wrapper's runner, a stream, a borrowed runner stream, an
    imported tensor) refuses afterwards with VG_ERR_STATE instead of touching freed memory; closing
    or releasing it again is a no-op."""
    import numpy as np
    from vgraph._native import Imported

    def refused(call):
        with pytest.raises(vgraph.VgError) as e:
            call()
        assert e.value.status_name == "VG_ERR_STATE"

    rt = vgraph.Runtime("kunlun_stub")
    x = np.ones((3, 2), np.float32)
    g = vgraph.GraphWrapper(lambda t: t * 2, rt, "full", capture_sizes=[4])
    g(x)
    borrowed = g.stream
    s = vgraph.Stream(rt)
    imp = Imported(rt, np.ones((3, 4), np.float32))
    rt.close()
    for call in (g.stats, lambda: g(x), g.invalidate, s.synchronize, lambda: s.native, borrowed.synchronize,
                 lambda: imp.ptr):
        refused(call)
    assert g.capture_sizes() == [4]  # what the wrapper knows without the library
    g.close()
    s.close()
    imp.release()  # the runtime's close released it already

    rt = vgraph.Runtime("kunlun_stub")
    g = vgraph.GraphWrapper(lambda t: t * 2, rt, "full", capture_sizes=[4])
    g(x)
    borrowed = g.stream
    g.close()  # the runner goes, and the stream it lent with it
    refused(borrowed.synchronize)
    imp = Imported(rt, np.ones((3, 4), np.float32))
    assert imp.ptr
    imp.release()  # released by hand, the runtime still open
    refused(lambda: imp.ptr)
    rt.close()


def test_interpreter_exit_without_closing():
    """Nothing closed by hand: at exit the garbage collector finalizes runtime, models and wrappers
    in any order, and vg's objects must still be freed before their device."""
    import subprocess
    import sys
    code = """if True:
        import warnings
        import numpy as np
        import vgraph
        warnings.simplefilter("ignore")
        rt = vgraph.Runtime("kunlun_stub")
        f = lambda v: v
        g = vgraph.GraphWrapper(f, rt, "none", capture_sizes=[8])
        x = np.ones((8, 4), np.float32)
        for mode in ("none", "full"):
            g = vgraph.GraphWrapper(f, rt, mode, capture_sizes=[8])
            for _ in range(3000):
                g(x)
        enc = vgraph.VisionEncoder.synthetic(rt, "qwen2.5-vl-tiny")
        stream = vgraph.Stream(rt)
        print("ok")
    """
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and r.stdout.strip() == "ok", (r.returncode, r.stderr[-2000:])


def test_options_mirrors_match_the_library():
    """Each options struct the package fills through the library's init function has the
    library's size: a mirror missing a member the library appended would let the library read
    (and its init write) past it."""
    from vgraph import _types as T
    from vgraph._lib import libmodels, libvg
    for init, cls in ((libvg().vg_runtime_options_init, T.RuntimeOptions),
                      (libvg().vg_runner_options_init, T.RunnerOptions),
                      (libmodels().vg_vit_options_init, T.VitOptions),
                      (libmodels().vg_lm_options_init, T.LmOptions)):
        o = T.options_init(init, cls)
        assert o.struct_size == ctypes.sizeof(cls), cls.__name__


def test_options_mirror_of_another_version_refused():
    from vgraph import _types as T
    from vgraph._lib import libmodels, libvg

    class Shorter(ctypes.Structure):  # vg_lm_options without its last member
        _fields_ = T.LmOptions._fields_[:-1]

    with pytest.raises(vgraph.VgError) as e:
        T.options_init(libmodels().vg_lm_options_init, Shorter)
    assert e.value.status_name == "VG_ERR_ABI" and "different versions" in e.value.message

    class Longer(ctypes.Structure):  # vg_runtime_options with a member this library predates
        _fields_ = T.RuntimeOptions._fields_ + [("appended", ctypes.c_int)]

    o = T.options_init(libvg().vg_runtime_options_init, Longer, versioned=True)  # read as far as it reaches
    assert o.struct_size == ctypes.sizeof(T.RuntimeOptions) and o.appended == 0


def test_close_refused_during_capture_keeps_the_handle():
    # vg_stream_destroy (and vg_mem_free) refuse with VG_ERR_CAPTURE while the thread captures on
    # another stream and keep the object: the Python owner must keep its handle to close it later
    calls = []

    def destroy(handle):
        calls.append(handle)
        return vgraph._errors.ERR_CAPTURE if len(calls) == 1 else vgraph._errors.OK

    owned = vgraph.runtime._Owned(destroy, 42)
    with pytest.raises(vgraph.VgError) as e:
        owned.close()
    assert e.value.status == vgraph._errors.ERR_CAPTURE
    assert owned.handle == 42
    owned.close()
    assert owned.handle is None and calls == [42, 42]
    owned.close()  # closed once
    assert calls == [42, 42]
