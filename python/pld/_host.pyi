# Type stubs of pld's bfloat16 helpers.
import numpy as np
import numpy.typing as npt

bfloat16: np.dtype

def to_bfloat16(values: npt.ArrayLike) -> np.ndarray: ...
def from_bfloat16(bits: npt.ArrayLike) -> np.ndarray: ...
