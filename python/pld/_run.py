"""pld.run: one-shot execution of an orchestrator on forked rank processes (or under mpirun)."""
import numpy as np

from ._pld import DistributedConfig, HostTensor, UsageError, _run


def run(config, orchestrator, *host_tensors):
    """Runs orchestrator(h, *host_tensors) on the host and its dispatches on the ranks; returns when
    every rank has finished. host_tensors are pld.HostTensor (shared from the start, no copy) or
    numpy arrays, which are copied into shared memory for the call and copied back afterwards;
    other values (numbers, strings, ...) reach the orchestrator unchanged, as in C++.
    Raises pld.UsageError for bad input and pld.RankError for a failure on a rank; either way no
    rank process and no shared memory is left behind."""
    if not isinstance(config, DistributedConfig):
        raise UsageError(f"pld.run: config is a {type(config).__name__}; pass pld.DistributedConfig(device_ids=[...])")
    shared, copies = [], []
    for t in host_tensors:
        if isinstance(t, np.ndarray):
            h = HostTensor.from_numpy(t)
            shared.append(h)
            copies.append((t, h))
        else:
            shared.append(t)
    for array, _ in copies:
        if not array.flags.writeable:
            raise UsageError("pld.run: a numpy array passed as a host tensor is read-only; results are written "
                             "back into it, pass a writeable array (or a pld.HostTensor)")
    _run(config, lambda h: orchestrator(h, *shared))
    for array, h in copies:
        array[...] = h.numpy()
