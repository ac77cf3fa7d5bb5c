"""pld.run: one-shot execution of an orchestrator on forked rank processes (or under mpirun)."""
import numpy as np

from ._pld import DistributedConfig, HostTensor, UsageError, _run, _shared_view


def run(config, orchestrator, *host_tensors):
    """Runs orchestrator(h, *host_tensors) on the host and its dispatches on the ranks; returns when
    every rank has finished. host_tensors are pld.HostTensor (shared from the start, no copy) or
    numpy arrays: one in shared memory (pld.shared_numpy) is passed as it is, any other is copied
    into shared memory for the call and copied back afterwards;
    other values (numbers, strings, ...) reach the orchestrator unchanged, as in C++.
    Raises pld.UsageError for bad input and pld.RankError for a failure on a rank; either way no
    rank process and no shared memory is left behind."""
    if not isinstance(config, DistributedConfig):
        raise UsageError(f"pld.run: config is a {type(config).__name__}; pass pld.DistributedConfig(device_ids=[...])")
    shared, copies = share_arrays("pld.run", host_tensors)
    _run(config, lambda h: orchestrator(h, *shared))
    copy_back(copies)


def share_arrays(api, args):
    """(args with every numpy array replaced by a HostTensor over its shared memory or by a copy,
    [(array, copy)]) for a call that writes its results back with copy_back (pld.run,
    DistributedWorker.run)."""
    shared, copies = [], []
    for t in args:
        if isinstance(t, np.ndarray):
            if not t.flags.writeable:
                raise UsageError(f"{api}: a numpy array passed as a host tensor is read-only; results are written "
                                 "back into it, pass a writeable array (or a pld.HostTensor)")
            h = _shared_view(t)
            if h is not None:
                shared.append(h)
                continue
            h = HostTensor.from_numpy(t)
            shared.append(h)
            copies.append((t, h))
        else:
            shared.append(t)
    return tuple(shared), copies


def copy_back(copies):
    for array, h in copies:
        array[...] = h.numpy()
