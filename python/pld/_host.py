"""pld.HostTensor's constructors beyond zeros, and bfloat16 as uint16 storage."""
import numpy as np

from ._pld import DType, HostTensor, UsageError, dtype as _dtype

#: bfloat16 values are stored as their upper 16 bits in uint16 arrays; pld reads uint16 arrays as
#: DType.BF16 (pld has no uint16 element type). Convert with to_bfloat16 / from_bfloat16.
bfloat16 = np.dtype(np.uint16)


def to_bfloat16(values):
    """float values -> uint16 array of their bfloat16 bits (round to nearest even; NaN stays NaN)."""
    f = np.ascontiguousarray(values, dtype=np.float32)
    bits = f.view(np.uint32).astype(np.uint64)
    rounded = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16
    out = rounded.astype(np.uint16)
    nan = np.isnan(f)
    out[nan] = ((bits[nan] >> 16) | 0x40).astype(np.uint16)
    return out


def from_bfloat16(bits):
    """uint16 array of bfloat16 bits -> float32 array (exact)."""
    b = np.ascontiguousarray(bits, dtype=np.uint16)
    return (b.astype(np.uint32) << 16).view(np.float32)


def _shape_of(shape):
    return (shape,) if isinstance(shape, int) else tuple(shape)


def _full(shape, value, dtype=DType.FP32):
    """A tensor of shape with every element value."""
    t = HostTensor(shape, dtype)
    t.numpy()[...] = _cast(value, t.dtype)
    return t


def _arange(shape, dtype=DType.FP32, start=0, step=1):
    """start, start + step, ... in row-major order."""
    t = HostTensor(shape, dtype)
    n = int(np.prod(_shape_of(shape), dtype=np.int64))
    values = start + step * np.arange(n, dtype=np.float64)
    t.numpy()[...] = _cast(values, t.dtype).reshape(t.shape)
    return t


def _from_numpy(array, dtype=None):
    """A copy of array (any numpy array or array-like) in shared memory; dtype converts it."""
    a = np.asarray(array)
    d = _dtype(a.dtype if dtype is None else dtype)
    t = HostTensor._uninitialized(a.shape, d)
    t.numpy()[...] = a if dtype is None else _cast(a, d)
    return t


def _random(shape, dtype=DType.FP32, seed=0, low=None, high=None):
    """Uniform random values from seed: floats in [-1, 1), signed ints in [-8, 8], unsigned [0, 16]."""
    d = _dtype(dtype)
    t = HostTensor(shape, d)
    rng = np.random.default_rng(seed)
    a = t.numpy()
    if d in (DType.FP32, DType.FP16, DType.FP64, DType.BF16):
        lo, hi = (-1.0 if low is None else low), (1.0 if high is None else high)
        a[...] = _cast(rng.uniform(lo, hi, size=a.shape), d)
    else:
        signed = d in (DType.INT8, DType.INT16, DType.INT32, DType.INT64)
        lo = (-8 if signed else 0) if low is None else low
        hi = (8 if signed else 16) if high is None else high
        a[...] = rng.integers(lo, hi, size=a.shape, endpoint=True)
    return t


def _cast(values, d):
    if d == DType.BF16:
        return to_bfloat16(values)
    return np.asarray(values).astype(d.numpy)


HostTensor.full = staticmethod(_full)
HostTensor.arange = staticmethod(_arange)
HostTensor.from_numpy = staticmethod(_from_numpy)
HostTensor.random = staticmethod(_random)
HostTensor.__array_priority__ = 1
del UsageError
