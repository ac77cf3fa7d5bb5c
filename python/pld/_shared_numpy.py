"""pld.shared_numpy(): numpy arrays created in pld's shared memory, passed to the ranks without copies."""
import contextlib

from ._pld import _shared_numpy_enter, _shared_numpy_exit


@contextlib.contextmanager
def shared_numpy(min_bytes=65536):
    """Within the block, numpy places every new array of at least ``min_bytes`` bytes in pld's
    shared memory (the memory of pld.HostTensor): pld.run, DistributedWorker.run and submit, and
    Host.dispatch take such an array, or a C-contiguous view of one, without copying it, and the
    ranks' results land in it directly. The arrays stay shared after the block; smaller arrays
    are ordinary memory (pld.run copies them, which costs little at that size). The setting is
    numpy's per-context memory handler (NEP 49): it applies to the current thread or asyncio
    task. pld.in_shared_memory(array) tells whether an array is shared."""
    old = _shared_numpy_enter(min_bytes)
    try:
        yield
    finally:
        _shared_numpy_exit(old)
