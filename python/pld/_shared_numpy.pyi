# Type stubs of pld.shared_numpy.
from typing import ContextManager

def shared_numpy(min_bytes: int = ...) -> ContextManager[None]:
    """Within the block, new numpy arrays of at least min_bytes live in pld's shared memory."""
