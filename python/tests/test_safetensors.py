# SPDX-License-Identifier: Apache-2.0
"""safetensors through vg's reader and writer: the dtypes NumPy has come back as those dtypes;
what NumPy cannot represent, or vg cannot write, is refused with VgError, never raw bytes."""
import json
import struct

import numpy as np
import pytest

import vgraph


def _write_raw(path, tensors):
    """A safetensors file by hand: {name: (dtype name, shape, bytes)}."""
    header, data = {}, b""
    for name, (dt, shape, raw) in tensors.items():
        header[name] = {"dtype": dt, "shape": list(shape), "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    h = json.dumps(header).encode()
    h += b" " * (-len(h) % 8)
    path.write_bytes(struct.pack("<Q", len(h)) + h + data)


def test_round_trip(tmp_path):
    p = tmp_path / "t.safetensors"
    src = {"a": np.arange(6, dtype=np.float32).reshape(2, 3), "b": np.array([1, -2], np.int64),
           "c": np.array([3], np.uint8)}
    vgraph.safetensors.save(p, src)
    back = vgraph.safetensors.load(p)
    assert set(back) == set(src)
    for k in src:
        assert back[k].dtype == src[k].dtype and np.array_equal(back[k], src[k])


def test_unsigned_integers_keep_their_type(tmp_path):
    p = tmp_path / "u.safetensors"
    u16 = np.array([[1, 65535]], np.uint16)
    u32 = np.array([7, 4000000000, 9], np.uint32)
    _write_raw(p, {"u16": ("U16", u16.shape, u16.tobytes()), "u32": ("U32", u32.shape, u32.tobytes())})
    back = vgraph.safetensors.load(p)
    assert back["u16"].dtype == np.uint16 and np.array_equal(back["u16"], u16)
    assert back["u32"].dtype == np.uint32 and np.array_equal(back["u32"], u32)


def test_what_numpy_cannot_hold_is_refused(tmp_path):
    p = tmp_path / "f8.safetensors"
    _write_raw(p, {"f8": ("F8_E4M3", (4,), bytes([0x38, 0x40, 0x44, 0x48]))})
    with pytest.raises(vgraph.VgError) as e:
        vgraph.safetensors.load(p)
    assert e.value.status_name == "VG_ERR_UNSUPPORTED" and "F8_E4M3" in e.value.message


def test_save_refuses_what_it_cannot_write(tmp_path):
    p = tmp_path / "bad.safetensors"
    for tensors in ({"a": np.ones(2)}, {"a": np.ones(2, bool)}, {"a\0b": np.ones(2, np.float32)},
                    {"": np.ones(1, np.float32)}):
        with pytest.raises(vgraph.VgError):
            vgraph.safetensors.save(p, tensors)
    assert not p.exists()  # nothing written
