# SPDX-License-Identifier: Apache-2.0
"""vg's failures as a Python exception carrying vg's status and message."""
import numbers
import operator


class VgError(RuntimeError):
    """A vg call failed. `status` is vg's code (vg_status), `status_name` its name
    ("VG_ERR_INVALID_ARG"), `message` vg's own text (vg_last_error)."""

    def __init__(self, status, status_name, message):
        self.status = int(status)
        self.status_name = status_name
        self.message = message
        super().__init__(f"{status_name}: {message}")


# vg_status values (vg_types.h): stable, only appended to
OK = 0
ERR_INVALID_ARG = 1
ERR_ABI = 5
ERR_UNSUPPORTED = 7
ERR_CAPTURE = 8
ERR_STATE = 12
ERR_INTERNAL = 13


def error_from_last(status):
    from ._lib import libvg
    vg = libvg()
    name = vg.vg_status_name(status)
    msg = vg.vg_last_error()
    return VgError(status, name.decode() if name else f"vg_status {status}",
                   msg.decode(errors="replace") if msg else "")


def check(status):
    """Raise VgError for a failed vg_status; return None on VG_OK."""
    if status != OK:
        raise error_from_last(status)


def raise_python(status, message):
    """A VgError raised by the package itself (bad Python arguments), in vg's terms."""
    from ._lib import libvg
    name = libvg().vg_status_name(status)
    raise VgError(status, name.decode() if name else f"vg_status {status}", message)


def checked_int(v, what, bits=64, unsigned=False):
    """v as a Python int that a C integer of `bits` bits holds: an int (or NumPy integer), or a
    float with no fraction; anything else, or a value out of range, is VgError (VG_ERR_INVALID_ARG)
    rather than the wrap-around or truncation ctypes would do silently."""
    try:
        i = operator.index(v)
    except TypeError:
        whole = isinstance(v, numbers.Real) or hasattr(v, "is_integer")  # NumPy's float32 too
        try:
            whole = whole and float(v).is_integer()
        except (OverflowError, ValueError, TypeError):  # inf, nan
            whole = False
        if not whole:
            raise_python(ERR_INVALID_ARG, f"{what}: {v!r} is not an integer")
        i = int(v)
    lo, hi = (0, 1 << bits) if unsigned else (-(1 << (bits - 1)), 1 << (bits - 1))
    if not lo <= i < hi:
        raise_python(ERR_INVALID_ARG, f"{what}: {i} does not fit a {'u' if unsigned else ''}int{bits}")
    return i
