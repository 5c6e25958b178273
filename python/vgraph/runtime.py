# SPDX-License-Identifier: Apache-2.0
"""The runtime: one backend, one open device (vg.h)."""
import ctypes

from . import _types as T
from ._errors import ERR_CAPTURE, check, checked_int, raise_python
from ._lib import libvg

# names for capability bits a libvg may not name yet (vg_cap_name knows its own)
CAPS = {T.CAP_GRAPH: "graph", T.CAP_GRAPH_UPDATE: "graph_update", T.CAP_IPC: "ipc",
        T.CAP_PINNED_HOST: "pinned_host", T.CAP_NATIVE: "native", T.CAP_FOREIGN_CAPTURE: "foreign_capture",
        T.CAP_GRAPH_LOOP: "graph_loop", T.CAP_COMM: "comm", T.CAP_COMM_CAPTURE: "comm_capture"}


def version():
    """(ABI major, ABI minor) of the plugin ABI this libvg speaks."""
    ma, mi = ctypes.c_uint32(), ctypes.c_uint32()
    libvg().vg_abi_version(ctypes.byref(ma), ctypes.byref(mi))
    return ma.value, mi.value


def builtin_backends():
    """vg's own backend names, in the order auto-selection considers them."""
    vg = libvg()
    return [vg.vg_backend_builtin_name(i).decode() for i in range(vg.vg_backend_builtin_count())]


def backend_candidates():
    """What auto-selection considers: the builtins, then plugins found on VG_BACKEND_PATH."""
    vg = libvg()
    n = vg.vg_backend_candidates(None, 0)
    arr = (ctypes.c_char_p * max(n, 1))()
    n = vg.vg_backend_candidates(arr, n)
    return [arr[i].decode() for i in range(n)]


def _device_dict(d):
    return {"index": d.index, "name": d.name.decode(errors="replace"), "mem_total": d.mem_total,
            "mem_free": d.mem_free, "caps": caps_names(d.caps), "arch": (d.arch_major, d.arch_minor),
            "compute_units": d.compute_units}


def caps_names(bits):
    vg = libvg()
    out = []
    for i in range(64):
        if bits & (1 << i):
            n = vg.vg_cap_name(1 << i)
            out.append(n.decode() if n else CAPS.get(1 << i, f"bit{i}"))
    return out


class BackendReport:
    """What loading one backend found (vg_backend_probe): usable or not, and why."""

    def __init__(self, r):
        self.request = r.request.decode(errors="replace")
        self.name = r.name.decode(errors="replace")
        self.path = r.path.decode(errors="replace")
        self.version = r.version.decode(errors="replace")
        self.abi = (r.abi_major, r.abi_minor)
        self.score = r.score
        self.loaded = bool(r.loaded)
        self.status = r.status
        self.error = r.error.decode(errors="replace")
        self.devices = [_device_dict(r.devices[i]) for i in range(min(r.device_count, T.PROBE_MAX_DEVICES))
                        if r.device_status[i] == 0]
        self.usable = self.status == 0 and bool(self.devices)

    def __repr__(self):
        what = f"{len(self.devices)} device(s)" if self.usable else self.error.splitlines()[0] if self.error else "unusable"
        return f"<BackendReport {self.request}: {what}>"


def probe(name_or_path):
    """Load one backend (as VG_BACKEND would name it), list its devices, unload it."""
    r = T.ProbeReport()
    r.struct_size = ctypes.sizeof(r)
    libvg().vg_backend_probe(name_or_path.encode(), ctypes.byref(r))
    return BackendReport(r)


def backends(usable_only=False):
    """A BackendReport for every candidate backend (builtins, then VG_BACKEND_PATH plugins)."""
    reports = [probe(c) for c in backend_candidates()]
    return [r for r in reports if r.usable] if usable_only else reports


class _Owned:
    """A C handle and the function that frees it; closed once, by its owner or by the runtime."""

    def __init__(self, destroy, handle):
        self.destroy = destroy
        self.handle = handle

    def close(self):
        if self.handle is not None:
            h, self.handle = self.handle, None
            st = self.destroy(h)
            if st == ERR_CAPTURE:  # refused while this thread captures (vg_device.h): kept, close it later
                self.handle = h
            check(st)


class Runtime:
    """One backend and one open device. backend: a name ("cuda", "kunlun_stub") or a plugin path;
    None takes $VG_BACKEND, else the usable backend with the highest score. device: an index, or
    -1 for the backend's default. options: backend options by name (the runtime options channel
    of libvg; refused with VgError when a name is unknown to the backend).

    Close it (or use it as a context manager) after every model and graph built on it."""

    def __init__(self, backend=None, device=-1, options=None):
        vg = libvg()
        o = T.options_init(vg.vg_runtime_options_init, T.RuntimeOptions, versioned=True)
        o.backend = backend.encode() if backend else None
        o.device = checked_int(device, "Runtime: device", 32)
        self._handle = None
        self._children = []
        from . import _native
        keep = _native.runtime_options_apply(o, options or {})
        h = ctypes.c_void_p()
        check(vg.vg_runtime_open(ctypes.byref(o), ctypes.byref(h)))
        del keep
        self._handle = h
        self.backend = vg.vg_runtime_backend_name(h).decode()
        self.plugin_path = vg.vg_runtime_plugin_path(h).decode()
        self.caps_bits = vg.vg_runtime_caps(h)

    @property
    def handle(self):
        if self._handle is None:
            raise_python(12, "the runtime is closed")
        return self._handle

    @property
    def caps(self):
        """The open device's capabilities by name: "graph", "graph_update", "ipc", ..."""
        return caps_names(self.caps_bits)

    @property
    def can_graph(self):
        return bool(self.caps_bits & T.CAP_GRAPH)

    @property
    def captures_foreign_work(self):
        """Whether work enqueued on a vg stream by someone else (PyTorch, a custom kernel) is
        recorded into vg's graphs. Read from the native-handles capability where libvg has it;
        an older libvg has no foreign capture at all."""
        from . import _native
        return _native.captures_foreign(self)

    def device_info(self):
        d = T.DeviceInfo()
        d.struct_size = ctypes.sizeof(d)
        check(libvg().vg_runtime_device_info(self.handle, ctypes.byref(d)))
        return _device_dict(d)

    def op_support(self, op_id):
        """(supported, capturable) for one vg_op_id."""
        bits = libvg().vg_runtime_op_support(self.handle, int(op_id), None)
        return bool(bits & 1), bool(bits & 2)

    def _own(self, destroy, handle):
        """Register a C object made on this runtime (a model, a runner, a stream): closed with the
        runtime, before the device, whichever of the two Python objects goes first (at interpreter
        exit the garbage collector finalizes them in any order)."""
        r = _Owned(destroy, handle)
        self._children = [c for c in self._children if c.handle is not None] + [r]
        return r

    def close(self):
        """Close the device. Models, graph wrappers and streams made on it are freed first."""
        if self._handle is None:
            return
        for r in reversed(self._children):
            r.close()
        self._children = []
        h, self._handle = self._handle, None
        check(libvg().vg_runtime_close(h))

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass

    def __repr__(self):
        return f"<vgraph.Runtime {self.backend} caps={self.caps}>" if self._handle else "<vgraph.Runtime closed>"


def selected_backend(backend=None):
    """The backend Runtime(backend) would open: the argument, else $VG_BACKEND, else the usable
    backend with the highest score (opened and closed to find out)."""
    with Runtime(backend) as rt:
        return rt.backend
