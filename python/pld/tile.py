"""pld.tile: tiles are numpy arrays. load / store move boxes between tiles and rank-local arrays or
this rank's copy of a window; read / write one element; remote_load / remote_store reach a peer's
copy of a window. add / sub / mul / max / min are element-wise on tiles of equal shape (fp16 via
numpy; bf16, stored as uint16, is computed in float32 and rounded once)."""
import numpy as np

from ._host import from_bfloat16, to_bfloat16
from ._pld import UsageError
from ._pld import _tile as _t

load = _t.load
store = _t.store
read = _t.read
write = _t.write
remote_load = _t.remote_load
remote_store = _t.remote_store


def _elementwise(name, f):
    def op(a, b):
        a = np.asarray(a)
        if not np.isscalar(b):
            b = np.asarray(b)
            if b.shape != a.shape:
                raise UsageError(f"tile::{name}: shapes {a.shape} and {b.shape} differ; pass tiles of equal shape "
                                 "(or a scalar)")
            if b.dtype != a.dtype:
                raise UsageError(f"tile::{name}: dtypes {a.dtype} and {b.dtype} differ; pass tiles of one dtype")
        if a.dtype == np.uint16:  # bfloat16 storage
            bf = from_bfloat16(b) if not np.isscalar(b) else np.float32(b)
            return to_bfloat16(f(from_bfloat16(a), bf))
        with np.errstate(over="ignore", invalid="ignore"):
            return f(a, b).astype(a.dtype, copy=False)
    op.__name__ = name
    op.__doc__ = f"Element-wise {name} of two tiles of equal shape, or of a tile and a scalar."
    return op


def _max(a, b):
    return np.where(np.asarray(b) < a, a, b)  # NaN: the second operand, as the collectives


def _min(a, b):
    return np.where(a < np.asarray(b), a, b)


add = _elementwise("add", np.add)
sub = _elementwise("sub", np.subtract)
mul = _elementwise("mul", np.multiply)
max = _elementwise("max", _max)  # noqa: A001
min = _elementwise("min", _min)  # noqa: A001


def full(shape, value, dtype=np.float32):
    """A tile of shape with every element value."""
    from ._pld import dtype as _dtype
    d = _dtype(dtype)
    out = np.empty(shape, d.numpy)
    out[...] = to_bfloat16(value) if d.short_name == "bf16" else value
    return out
