# SPDX-License-Identifier: Apache-2.0
"""vg's graph runner around Python code (vg_runner.h): GraphWrapper, shaped after vLLM's
CUDAGraphWrapper (a runnable, a runtime mode, a BatchDescriptor per call).

Each call is keyed by a batch descriptor; vg buckets its token count into the capture sizes,
and the wrapper copies the token-indexed arguments (tensors whose first dimension is the token
count) into static buffers of the bucket's size, zero-padded. vg then replays the bucket's graph,
captures it (torch's current stream, wrapped as a vg stream; torch's allocations during capture
come from a torch.cuda.MemPool kept as long as the wrapper, as torch.cuda.graph keeps its pool),
or runs the runnable eagerly: above max_capture_size, in mode NONE, after a failed capture, and on
backends whose graphs cannot record foreign work (OpenCL, kunlun_stub: said once, as a warning).
Once a descriptor's graph has replayed, its later calls take the replay path: one C call,
vg_runner_replay, copies and pads the inputs and launches the graph, without Python callbacks.
"""
import ctypes
import dataclasses
import enum
import logging
import warnings

from . import _types as T
from ._errors import check, checked_int, raise_python, ERR_INVALID_ARG, ERR_STATE
from ._lib import libvg

log = logging.getLogger("vgraph")
_warned_backends = set()

MODES = {"none": T.MODE_NONE, "piecewise": T.MODE_PIECEWISE, "full": T.MODE_FULL,
         "full_and_piecewise": T.MODE_FULL_AND_PIECEWISE}


class CUDAGraphMode(enum.IntEnum):
    """vg_graph_mode, with vLLM's names."""
    NONE = T.MODE_NONE
    PIECEWISE = T.MODE_PIECEWISE
    FULL = T.MODE_FULL
    FULL_AND_PIECEWISE = T.MODE_FULL_AND_PIECEWISE


@dataclasses.dataclass(frozen=True)
class BatchDescriptor:
    """The key of a graph (vg_batch_desc): calls with equal descriptors after bucketing share one.
    num_tokens is what gets bucketed and padded; the rest is the caller's to define."""
    num_tokens: int
    num_requests: int = 0
    uniform: bool = False
    variant: int = 0

    def __post_init__(self):  # the C struct's widths (vg_batch_desc), checked once, here
        checked_int(self.num_tokens, "BatchDescriptor: num_tokens", 64)
        checked_int(self.num_requests, "BatchDescriptor: num_requests", 32)
        checked_int(self.variant, "BatchDescriptor: variant", 32, unsigned=True)


def run_info_dict(ri):
    return {"padded_tokens": ri.padded_tokens, "bucket": ri.bucket, "path": T.RUN_PATHS.get(ri.path, str(ri.path)),
            "graph_launches": ri.graph_launches, "eager_pieces": ri.eager_pieces, "captures": ri.captures,
            "host_ms": ri.host_ms}


def _stats_dict(s):
    return {f: getattr(s, f) for f, _ in T.BucketStats._fields_}


def runner_stats(runner_handle):
    """(rows, total): one dict per bucket (then the row of calls above the threshold, size -1)."""
    vg = libvg()
    n = vg.vg_runner_stats(runner_handle, None, 0, None)
    rows = (T.BucketStats * max(n, 1))()
    total = T.BucketStats()
    n = vg.vg_runner_stats(runner_handle, rows, n, ctypes.byref(total))
    return [_stats_dict(rows[i]) for i in range(n)], _stats_dict(total)


def default_capture_sizes():
    p = ctypes.POINTER(ctypes.c_int64)()
    n = libvg().vg_runner_default_sizes(ctypes.byref(p))
    return [p[i] for i in range(n)]


# ---- arrays: torch tensors and NumPy arrays, whichever the caller uses --------------------------

def _is_array(x):
    return hasattr(x, "shape") and hasattr(x, "__dlpack__") and len(getattr(x, "shape", ())) >= 1


def _is_torch(x):
    return type(x).__module__.split(".")[0] == "torch"


def _zeros_like_rows(x, rows):
    if _is_torch(x):
        return x.new_zeros((rows,) + tuple(x.shape[1:]))
    import numpy as np
    return np.zeros((rows,) + tuple(x.shape[1:]), dtype=x.dtype)


def _copy_rows(dst, src, n):
    """dst[:n] = src[:n]; dst[n:] = 0 (the padding rows: harmless zeros)."""
    if _is_torch(dst):
        dst[:n].copy_(src[:n], non_blocking=True)
        if dst.shape[0] > n:
            dst[n:].zero_()
    else:
        dst[:n] = src[:n]
        dst[n:] = 0


def _copy_into(dst, src):
    if _is_torch(dst):
        dst.copy_(src, non_blocking=True)
    else:
        dst[...] = src


def _map(x, fn):
    if isinstance(x, (tuple, list)):
        return type(x)(_map(v, fn) for v in x)
    if isinstance(x, dict):
        return {k: _map(v, fn) for k, v in x.items()}
    return fn(x)


def _copy_tree(dst, src):
    if isinstance(dst, (tuple, list)):
        for d, s in zip(dst, src):
            _copy_tree(d, s)
    elif isinstance(dst, dict):
        for k in dst:
            _copy_tree(dst[k], src[k])
    elif _is_array(dst):
        _copy_into(dst, src)


class Piece:
    """One piece of a wrapped forward: fn(previous output) -> output (the first piece gets the
    call's arguments). splitting=True: run eagerly between graphs in PIECEWISE mode (vLLM's
    splitting ops, e.g. attention)."""

    def __init__(self, fn, splitting=False, name=None):
        self.fn = fn
        self.splitting = splitting
        self.name = name or getattr(fn, "__name__", "piece")


class _Mismatch(Exception):
    """An argument no longer matches the static buffer a replay copies it into."""


_MISS = object()  # the replay path cannot serve this call: it goes through vg_runner_run


def _torch_source(buf, n):
    """The data pointer of a torch argument that fits `buf`'s first n rows without a conversion."""
    shape, dtype, dev = (n,) + tuple(buf.shape[1:]), buf.dtype, buf.get_device()

    def src(x):
        if x.shape != shape or x.dtype is not dtype or x.get_device() != dev or not x.is_contiguous():
            raise _Mismatch
        return x.data_ptr()
    return src


def _numpy_source(buf, n):
    shape, dtype, kind = (n,) + tuple(buf.shape[1:]), buf.dtype, type(buf)

    def src(x):
        if type(x) is not kind or x.shape != shape or x.dtype != dtype or not x.flags.c_contiguous:
            raise _Mismatch
        return _numpy_address(x)
    return src


def _numpy_address(x):
    try:  # through the buffer protocol: a third of the time of x.ctypes.data
        return ctypes.addressof(ctypes.c_char.from_buffer(x))
    except (TypeError, ValueError):  # read-only or empty
        return x.ctypes.data


def _current_raw_stream():
    """torch's current CUDA stream as an int (cudaStream_t), without making a Stream object."""
    global _raw_stream
    if _raw_stream is None:
        import torch
        raw, device = getattr(torch._C, "_cuda_getCurrentRawStream", None), torch.cuda.current_device
        _raw_stream = (lambda: raw(device())) if raw else (lambda: torch.cuda.current_stream().cuda_stream)
    return _raw_stream()


_raw_stream = None


class _Replay:
    """What a replayed call needs, made once per batch descriptor and argument layout from a call
    that replayed through vg_runner_run: the vg_runner_input array (static buffers filled in, only
    src changes from call to call), how to check and point at each token-indexed argument, the
    arguments that must not turn token-indexed, and the result (views of the static outputs)."""
    __slots__ = ("desc", "inputs", "count", "slots", "others", "n", "out")


class GraphWrapper:
    """vg's runner around `runnable` (a callable of torch or NumPy code), or around `pieces`
    (a list of Piece, chained). Call it like the runnable: wrapper(*args, batch_descriptor=None,
    **kwargs). Arguments whose first dimension is the token count are copied into static,
    zero-padded buffers; every other argument must stay at the same address from call to call
    (weights, caches), as with torch.cuda.graph. The result is the runnable's, with token-indexed
    outputs cut back to the real token count; after a replay it is a view of the graph's static
    output, rewritten by the next call of the same bucket.

    runtime: a vgraph.Runtime (None: a new one on the selected backend). runtime_mode:
    CUDAGraphMode or its name. capture_sizes: ascending token counts (None: vg's default ladder);
    max_capture_size: calls above run eagerly (0: the largest size); memory_budget: bytes of graph
    memory before vg evicts the least recently used graph (0: unlimited); eager_first: serve a
    bucket's first call eagerly, then capture (torch's lazy initialisations stay out of graphs).
    token_args: the positions (ints) and keyword names (strs) of the token-indexed arguments;
    None: every array argument whose first dimension is the token count (give it when another
    argument, a cache of max-batch rows say, may happen to have that many rows).
    foreign: the runnable enqueues work vg does not launch (PyTorch, NumPy), captured only where
    the backend captures foreign work (cuda); False: it enqueues only vg's own work on
    `wrapper.stream` (vg ops through libvg), which every backend with graphs captures.

    Once a bucket's graph has replayed, later calls of the same descriptor and argument layout
    take the replay path: one C call (vg_runner_replay) copies the token-indexed arguments into
    their static buffers, pads them and launches the graph, with no Python callback."""

    def __init__(self, runnable=None, runtime=None, runtime_mode=CUDAGraphMode.FULL_AND_PIECEWISE, *,
                 pieces=None, capture_sizes=None, max_capture_size=0, memory_budget=0, eager_first=True,
                 token_args=None, foreign=True):
        if (runnable is None) == (pieces is None):
            raise_python(ERR_INVALID_ARG, "GraphWrapper: give a runnable or pieces, not both")
        self.runnable = runnable
        self.pieces = [p if isinstance(p, Piece) else Piece(p) for p in (pieces or [Piece(runnable)])]
        if isinstance(runtime_mode, str):
            runtime_mode = CUDAGraphMode[runtime_mode.upper()]
        self.runtime_mode = CUDAGraphMode(runtime_mode)
        if runtime is None:
            from .runtime import Runtime
            runtime = Runtime()
            self._own_runtime = runtime
        self.runtime = runtime
        self._capture_sizes = list(capture_sizes) if capture_sizes is not None else None
        self._max_capture_size = int(max_capture_size)
        self._budget = int(memory_budget)
        self._eager_first = int(bool(eager_first))
        self._token_args = None if token_args is None else set(token_args)
        self.foreign = bool(foreign)
        self.foreign_capture = runtime.captures_foreign_work and runtime.can_graph
        # the pieces can be captured here; torch's stream and memory pool only for foreign work
        self._capturable = runtime.can_graph and (self.foreign_capture or not self.foreign)
        self._torch_work = self.foreign and self.foreign_capture
        from ._lib import has
        self._replay_ok = has("vg_runner_replay")  # an older libvg: every call through vg_runner_run
        self._runner_res = None   # the runtime's record of the vg_runner, once built
        self._stream = None       # the vg stream over torch's stream (cuda), or None
        self._stream_native = None
        self._side = None          # torch side stream when the caller is on the default stream
        self._side_events = None   # (in, out, default stream): how the replay path orders the side stream
        self._static = {}          # key -> {"buffers": {arg: static input}, "out": {piece: output}, "pool": MemPool}
        self._replays = {}         # (descriptor, argument layout) -> _Replay
        self._sizes = []
        self._call = None          # per-call state, set by __call__ and read by the callbacks
        self._error = None
        self._info = T.RunInfo()
        self._info.bucket = -2     # no call yet
        self._info_p = ctypes.pointer(self._info)
        self._replayed = ctypes.c_int(0)
        self._replayed_p = ctypes.pointer(self._replayed)
        self._make_callbacks()

    def unwrap(self):
        return self.runnable if self.runnable is not None else self.pieces

    # ---- the runner ------------------------------------------------------------------------

    def _make_callbacks(self):
        self._cb_reserve = T.RESERVE_FN(lambda m, r, padded: 0)
        self._cb_prepare = T.PREPARE_FN(self._prepare)
        self._cb_run = T.PIECE_RUN(self._run_piece)
        self._cb_never = T.PIECE_GRAPH_SAFE(lambda m, padded: 0)

    def _build(self, native_stream):
        vg = libvg()
        n = len(self.pieces)
        self._pieces_c = (T.Piece * n)()
        self._names = [p.name.encode() for p in self.pieces]
        for i, p in enumerate(self.pieces):
            pc = self._pieces_c[i]
            pc.name = self._names[i]
            pc.run = self._cb_run
            pc.flags = (T.PIECE_FOREIGN if self.foreign else 0) | (T.PIECE_SPLITTING if p.splitting else 0)
            if not self._capturable:
                # Graphs here record only vg's own launches: Python's work cannot be captured. A
                # libvg that knows VG_PIECE_FOREIGN decides the same; an older one is told here.
                pc.graph_safe = self._cb_never
            pc.arg = i
        self._iface = T.ModelIface()
        self._iface.struct_size = ctypes.sizeof(self._iface)
        self._iface.pieces = self._pieces_c
        self._iface.num_pieces = n
        self._iface.reserve = self._cb_reserve
        self._iface.prepare = self._cb_prepare
        o = T.options_init(vg.vg_runner_options_init, T.RunnerOptions)
        o.mode = int(self.runtime_mode)
        if self._capture_sizes is not None:
            self._sizes_c = (ctypes.c_int64 * len(self._capture_sizes))(*self._capture_sizes)
            o.capture_sizes = self._sizes_c
            o.num_capture_sizes = len(self._capture_sizes)
        o.max_capture_size = self._max_capture_size
        o.graph_memory_budget = self._budget
        o.eager_first = self._eager_first
        if native_stream is not None:
            from ._native import Stream
            self._stream = Stream.wrap(self.runtime, native_stream)
            self._stream_native = native_stream
            o.stream = self._stream.handle
        h = ctypes.c_void_p()
        check(vg.vg_runner_create(self.runtime.handle, ctypes.byref(self._iface), ctypes.byref(o), ctypes.byref(h)))
        self._runner_res = self.runtime._own(vg.vg_runner_destroy, h)
        self._sizes = [vg.vg_runner_bucket_size(h, b) for b in range(vg.vg_runner_num_buckets(h))]
        self._vg_replay = None
        if self._replay_ok:
            # A function object of its own, without argtypes: the replay path passes ready ctypes
            # pointers, and ctypes' per-argument conversion would cost more than the call itself.
            self._vg_replay = vg["vg_runner_replay"]
            self._vg_replay.restype = ctypes.c_int
        if not self._capturable and self.runtime_mode != CUDAGraphMode.NONE and \
                self.runtime.backend not in _warned_backends:
            _warned_backends.add(self.runtime.backend)  # said once per backend and process
            if self.foreign:
                msg = (f"vgraph.GraphWrapper: the {self.runtime.backend} backend does not capture work "
                       "enqueued by others (PyTorch, NumPy) into its graphs: the wrapped callable runs "
                       "eagerly, with vg's bucketing, padding and statistics")
            else:
                msg = (f"vgraph.GraphWrapper: the {self.runtime.backend} backend has no graphs: the "
                       "wrapped callable runs eagerly, with vg's bucketing, padding and statistics")
            warnings.warn(msg, RuntimeWarning, stacklevel=5)

    def _torch_stream(self):
        """The torch stream the runner works on: torch's current one, or, when that is the legacy
        default stream (which cannot be captured), a side stream of the wrapper's that waits for
        it and that it waits for (as torch.cuda.graph captures on a side stream)."""
        import torch
        cur = torch.cuda.current_stream()
        if cur.cuda_stream != 0:
            return cur, None
        if self._side is None:
            self._side = torch.cuda.Stream()
        return self._side, cur

    def _ensure_runner(self):
        native = None
        if self._torch_work:
            native = self._torch_stream()[0].cuda_stream
        if self._runner is not None and native != self._stream_native:
            log.info("vgraph.GraphWrapper: torch's current stream changed: graphs are captured anew")
            self._destroy_runner()
        if self._runner is None:
            self._build(native)

    @property
    def _runner(self):
        """The vg_runner, None before the first call; VgError (VG_ERR_STATE) once the runtime
        closed it."""
        r = self._runner_res
        if r is not None and r.handle is None:
            raise_python(ERR_STATE, "GraphWrapper: its runtime is closed")
        return None if r is None else r.handle

    def _destroy_runner(self):
        self._replays = {}
        if self._runner_res is not None:
            r, self._runner_res = self._runner_res, None
            r.close()
        if self._stream is not None:
            self._stream.close()
            self._stream = None
        self._stream_native = None
        self._static = {}
        self._vg_stream = None

    @property
    def stream(self):
        """The vg stream the runner enqueues on (a vgraph.Stream, borrowed): where a runnable of
        foreign=False enqueues its vg work. None before the first call."""
        if self._runner is None:
            return None
        if getattr(self, "_vg_stream", None) is None:
            from ._native import Stream
            self._vg_stream = Stream(self.runtime, ctypes.c_void_p(libvg().vg_runner_stream(self._runner)),
                                     owned=False, owner=self._runner_res)
        return self._vg_stream

    def _bucket_of(self, n):
        """Index into the capture sizes of a call of n tokens, -1 above them (vg_runner_bucket_for)."""
        import bisect
        b = bisect.bisect_left(self._sizes, n)
        return b if b < len(self._sizes) else -1

    # ---- callbacks (run inside vg_runner_run, on the calling thread) ---------------------------

    def _fail(self, exc):
        self._error = exc
        return libvg().vg_error_set(ERR_STATE, b"%s", f"vgraph.GraphWrapper: the Python piece raised "
                                    f"{type(exc).__name__}: {exc}".encode(errors="replace"))

    def _prepare(self, model, runner, real, padded, stream, inputs):
        try:
            c = self._call
            n, pn = real.contents.num_tokens, padded.contents.num_tokens
            key = (pn, padded.contents.num_requests, padded.contents.uniform, padded.contents.variant)
            bucketed = self._bucket_of(n) >= 0 and self.runtime_mode != CUDAGraphMode.NONE
            c["current"] = {}
            if not bucketed:  # eager, unpadded: the arguments as they are
                c["static"] = {"out": {}, "pool": None, "captured": False}
                c["args"], c["kwargs"] = c["real_args"], c["real_kwargs"]
                c["keep_outputs"] = False
                return 0
            st = self._static.get(key)
            if st is None:
                st = {"out": {}, "pool": None, "buffers": {}, "captured": False}
                self._static[key] = st
            bufs = st["buffers"]

            def pad(path, x):
                chosen = self._token_args is None or path[1] in self._token_args
                if chosen and _is_array(x) and x.shape[0] == n:
                    b = bufs.get(path)
                    if b is None or tuple(b.shape[1:]) != tuple(x.shape[1:]) or b.dtype != x.dtype:
                        if b is not None and st["captured"]:
                            # a graph of this key reads the old buffer: it cannot move under it
                            raise ValueError(f"argument {path[1]!r} changed from {tuple(b.shape[1:])} {b.dtype} "
                                             f"to {tuple(x.shape[1:])} {x.dtype} for one batch descriptor; "
                                             "give such calls another BatchDescriptor.variant")
                        b = bufs[path] = _zeros_like_rows(x, pn)
                    _copy_rows(b, x, n)
                    return b
                return x
            c["args"] = tuple(pad(("a", i), x) for i, x in enumerate(c["real_args"]))
            c["kwargs"] = {k: pad(("k", k), x) for k, x in c["real_kwargs"].items()}
            c["static"] = st
            c["keep_outputs"] = self._capturable  # static outputs matter only to graphs
            return 0
        except BaseException as e:  # noqa: B902 - handed back to the caller by __call__
            return self._fail(e)

    def _run_piece(self, model, runner, piece, padded, stream):
        capturing = False
        try:
            c = self._call
            i = piece.contents.arg
            st = c["static"]
            capturing = bool(stream) and bool(libvg().vg_stream_is_capturing(stream))
            if i == 0:
                inp = None
            elif capturing:
                inp = st["out"][i - 1]
            else:
                inp = c["current"][i - 1] if (i - 1) in c["current"] else st["out"][i - 1]
            fn = self.pieces[i].fn
            call = (lambda: fn(*c["args"], **c["kwargs"])) if i == 0 else (lambda: fn(inp))
            if capturing:
                st["captured"] = True
                # the new graph writes new static outputs: replay entries of this key return old ones
                for key in st.pop("replays", ()):
                    self._replays.pop(key, None)
                out = self._captured(st, call)
                st["out"][i] = out  # the graph writes here on every replay
                return 0
            out = call()
            if c["keep_outputs"]:
                if i in st["out"]:
                    _copy_tree(st["out"][i], out)  # a later graph reads it at this address
                    out = st["out"][i]
                else:
                    st["out"][i] = out
            c["current"][i] = out
            return 0
        except BaseException as e:  # noqa: B902
            if capturing:
                # vg ends the capture and runs the piece eagerly: only that run's error is the call's
                log.warning("vgraph.GraphWrapper: capturing %s failed (%s: %s); it runs eagerly",
                            self.pieces[piece.contents.arg].name, type(e).__name__, e)
                return libvg().vg_error_set(ERR_STATE, b"%s", f"capture: {type(e).__name__}: {e}".encode(errors="replace"))
            return self._fail(e)

    def _captured(self, st, call):
        if not self._torch_work:  # vg's own work: nothing of torch's to keep
            return call()
        import torch
        if st["pool"] is None:
            st["pool"] = torch.cuda.MemPool()  # lives with the key's graph (and the wrapper)
        with torch.cuda.use_mem_pool(st["pool"]):
            return call()

    # ---- calls -------------------------------------------------------------------------------

    def _count_tokens(self, args, kwargs):
        """The token count of a call without a batch descriptor: the first candidate array's rows."""
        ta = self._token_args
        for i, x in enumerate(args):
            if (ta is None or i in ta) and _is_array(x):
                return x.shape[0]
        for k, x in kwargs.items():
            if (ta is None or k in ta) and _is_array(x):
                return x.shape[0]
        raise_python(ERR_INVALID_ARG, "GraphWrapper: no batch_descriptor and no array argument to "
                     "take the token count from")

    def __call__(self, *args, batch_descriptor=None, **kwargs):
        bd = batch_descriptor
        if bd is None:
            key = (self._count_tokens(args, kwargs), 0, False, 0, len(args), tuple(kwargs))
        else:
            key = (bd.num_tokens, bd.num_requests, bool(bd.uniform), bd.variant, len(args), tuple(kwargs))
        ent = self._replays.get(key)
        if ent is not None:
            out = self._replay(ent, args, kwargs)
            if out is not _MISS:
                return out
        return self._run(args, kwargs, bd if bd is not None else BatchDescriptor(int(key[0])), key)

    def _replay(self, ent, args, kwargs):
        """The replay path: point each token-indexed input at its argument, then one C call copies,
        pads and launches. _MISS when the call does not fit it (vg_runner_run then decides)."""
        try:
            for where, k, src, s in ent.slots:
                s.src = src(args[k] if where == 0 else kwargs[k])
            for where, k in ent.others:  # an argument the general path would now pad
                x = args[k] if where == 0 else kwargs[k]
                if _is_array(x) and x.shape[0] == ent.n:
                    return _MISS
        except (_Mismatch, AttributeError, TypeError, IndexError, KeyError):
            return _MISS
        side = None
        if self._torch_work:
            raw = _current_raw_stream()
            if raw != self._stream_native:
                if raw != 0 or self._side_events is None or self._side.cuda_stream != self._stream_native:
                    return _MISS  # another stream: the general path captures on it anew
                side = self._side  # the caller is on the legacy default stream: order the side stream
                ev_in, ev_out, caller = self._side_events
                ev_in.record(caller)
                side.wait_event(ev_in)
        h = self._runner_res.handle  # the hot path: the record itself, not the property
        if h is None:
            raise_python(ERR_STATE, "GraphWrapper: its runtime is closed")
        st = self._vg_replay(h, ent.desc, ent.inputs, ent.count, self._info_p, self._replayed_p)
        if st:
            check(st)
        if not self._replayed.value:
            return _MISS
        if side is not None:
            ev_out.record(side)
            caller.wait_event(ev_out)  # the caller's stream waits for the side stream's work
        return ent.out

    def _remember_replay(self, key, bd, args, kwargs, out):
        """After a call that replayed one graph through vg_runner_run: what later calls of the same
        key need to replay through vg_runner_replay, when every token-indexed argument is a kind
        whose memory vg can copy (torch CUDA tensors for foreign work, NumPy arrays where device
        memory is host memory)."""
        c, n = self._call, int(bd.num_tokens)
        ta = self._token_args
        layout = [(0, i, x, c["args"][i]) for i, x in enumerate(args)] + \
                 [(1, k, x, c["kwargs"][k]) for k, x in kwargs.items()]
        slots, others, specs = [], [], []
        for where, k, x, b in layout:
            if b is x:  # passed as it is
                if ta is None or k in ta:
                    others.append((where, k))
                continue
            if self._torch_work and _is_torch(b) and b.is_cuda:
                src, dst, nbytes = _torch_source(b, n), b.data_ptr(), b.numel() * b.element_size()
            elif not self.foreign and type(b).__module__ == "numpy" and self._host_memory():
                src, dst, nbytes = _numpy_source(b, n), _numpy_address(b), b.nbytes
            else:
                return
            try:
                src(x)
            except (_Mismatch, AttributeError, TypeError):
                return
            slots.append((where, k, src))
            specs.append((dst, nbytes // b.shape[0], nbytes))
        ent = _Replay()
        ent.desc = ctypes.pointer(T.BatchDesc(n, int(bd.num_requests), int(bool(bd.uniform))))
        ent.desc.contents.variant = int(bd.variant)
        ent.count = len(specs)
        ent.inputs = (T.RunnerInput * max(1, len(specs)))()
        ent.slots = []
        for i, ((where, k, src), (dst, row, nbytes)) in enumerate(zip(slots, specs)):
            s = ent.inputs[i]
            s.dst, s.row_bytes, s.dst_bytes = dst, row, nbytes
            ent.slots.append((where, k, src, s))
        ent.others, ent.n, ent.out = others, n, out
        if self._torch_work and self._side is not None and self._side_events is None:
            import torch
            self._side_events = (torch.cuda.Event(), torch.cuda.Event(), torch.cuda.default_stream(self._side.device))
        self._replays[key] = ent
        c["static"].setdefault("replays", set()).add(key)

    def _host_memory(self):
        """Whether the runtime's device memory is host memory (kunlun_stub), where NumPy's is vg's."""
        if getattr(self, "_host_mem", None) is None:
            from ._native import native_device
            try:
                self._host_mem = native_device(self.runtime)["api"] == "host"
            except Exception:  # a libvg without native handles
                self._host_mem = False
        return self._host_mem

    def _run(self, args, kwargs, bd, key):
        """The general path: vg_runner_run, with the wrapper's callbacks staging the inputs and
        running the pieces (eagerly, or while vg captures them)."""
        if bd.num_tokens < 1:
            raise_python(ERR_INVALID_ARG, f"GraphWrapper: num_tokens is {bd.num_tokens} (must be >= 1)")
        self._ensure_runner()
        desc = T.BatchDesc(int(bd.num_tokens), int(bd.num_requests), int(bool(bd.uniform)))
        desc.variant = int(bd.variant)
        info = self._info
        self._call = {"real_args": args, "real_kwargs": kwargs}
        self._error = None
        side = caller = None
        if self._torch_work:
            import torch
            side, caller = self._torch_stream()
            if caller is not None:
                side.wait_stream(caller)
        try:
            if caller is not None:
                with torch.cuda.stream(side):
                    st = libvg().vg_runner_run(self._runner, ctypes.byref(desc), None, self._info_p)
                caller.wait_stream(side)
            else:
                st = libvg().vg_runner_run(self._runner, ctypes.byref(desc), None, self._info_p)
            if self._error is not None:
                raise self._error
            check(st)
            c = self._call
            last = len(self.pieces) - 1
            out = c["current"][last] if last in c["current"] else c["static"]["out"][last]
            if caller is not None:  # made on the side stream, used on the caller's from now on
                _map(out, lambda x: x.record_stream(caller) if _is_torch(x) and hasattr(x, "record_stream") else x)
            n, pn = bd.num_tokens, info.padded_tokens
            if pn != n:
                out = _map(out, lambda x: x[:n] if _is_array(x) and x.shape[0] == pn else x)
            if self._replay_ok and self._capturable and info.bucket >= 0 and info.graph_launches > 0 \
                    and info.eager_pieces == 0:
                self._remember_replay(key, bd, args, kwargs, out)
        finally:
            self._call = None
        return out

    # ---- introspection -------------------------------------------------------------------------

    @property
    def last_run(self):
        """What the last call did: padded_tokens, bucket, path, graph_launches, eager_pieces,
        captures, host_ms (None before the first call)."""
        return None if self._info.bucket == -2 else run_info_dict(self._info)

    @property
    def mode(self):
        """The runner's mode after downgrades ("piecewise" when a piece cannot be captured)."""
        if self._runner is None:
            return self.runtime_mode.name.lower()
        return libvg().vg_graph_mode_name(libvg().vg_runner_mode(self._runner)).decode()

    def capture_sizes(self):
        if self._runner_res is None:
            return list(self._capture_sizes) if self._capture_sizes is not None else default_capture_sizes()
        return list(self._sizes)

    def stats(self):
        """(rows, total): per-bucket hits, captures, replays, eager runs, padding, graph bytes."""
        if self._runner is None:
            return [], {}
        return runner_stats(self._runner)

    def invalidate(self):
        """Every graph is captured again on next use (after the runnable's state moved)."""
        if self._runner is not None:
            check(libvg().vg_runner_invalidate(self._runner))

    def close(self):
        self._destroy_runner()

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass
