"""pld.DistributedWorker: fork the ranks once, dispatch many times (the model's
``compiled.prepare()``).

::

    def step(h, x):                      # an orchestrator ("program"), as for pld.run
        for r in range(h.world_size()):
            h.dispatch(r, kernel, x[r])

    with pld.DistributedWorker(pld.DistributedConfig(device_ids=[0, 1]), step) as rt:
        for _ in range(1000):
            rt(x)                        # each call: record, check, execute on the kept ranks
        handle = rt.submit(step, y)      # asynchronous; at most two calls in flight
        handle.result()                  # waits, raises the call's error

Which kernels a worker can run
------------------------------
The rank processes are forked when the worker starts, so a kernel must exist in them. A worker
runs a Python kernel that is

* a module-level function (``def`` at the top of a module or of the script) defined **before the
  worker started** — the ranks find it by its module and name;
* any function object (a lambda, a nested function) passed in ``kernels=[...]`` when the worker
  is created — it is registered before the ranks fork; dispatch that same object; or
* a function that pld.run or another worker dispatched before this worker started.

Anything else fails the call with a pld.RankError whose message names the kernel and says why
the rank cannot find it: a lambda or nested function not listed in ``kernels``, a function
defined after the worker started. The worker stays usable. A module-level function *redefined*
after the worker started still runs its old definition in the ranks: create a new worker after
changing kernels. ``pld.run`` forks for every call and runs any kernel. The orchestrators
(``programs``) run on the calling thread and may be any callables, but must be registered when
the worker is created.

After a rank fails (its kernel raises, calls ``os._exit`` or is killed) the call raises
pld.RankError; with ``recovery=True`` (the default) the worker replaces the lost rank process and
the next call runs normally. Resident tensors held by a lost rank are lost with it.
"""

import atexit
import weakref

import numpy

from . import _pld
from ._run import copy_back as _copy_back
from ._run import share_arrays as _share_arrays

__all__ = ["DistributedWorker", "StackedDeviceTensor", "RunHandle", "DeviceTensor", "BenchmarkStats"]

RunHandle = _pld.RunHandle
DeviceTensor = _pld.DeviceTensor
BenchmarkStats = _pld.BenchmarkStats

_live_workers = weakref.WeakSet()


@atexit.register
def _close_live_workers():
    # A worker left open at exit would end its rank processes during interpreter teardown.
    for worker in list(_live_workers):
        worker.close()


class StackedDeviceTensor:
    """B resident shards of equal shape; shard i on world rank ``worker_ids[i]`` (the model's
    ``x[i]``). Made by DistributedWorker.alloc_stacked_tensor."""

    def __init__(self, shards, full_shape, worker_ids):
        self.shards = tuple(shards)
        self.full_shape = tuple(full_shape)
        self.worker_ids = tuple(worker_ids)

    @property
    def dtype(self):
        return self.shards[0].dtype

    def __len__(self):
        return len(self.shards)

    def __getitem__(self, i):
        if not isinstance(i, int) or not -len(self.shards) <= i < len(self.shards):
            raise _pld.UsageError(
                f"StackedDeviceTensor[{i!r}]: index out of range [0, {len(self.shards)}); "
                "pass a shard index (an int)")
        return self.shards[i]

    def __iter__(self):
        return iter(self.shards)

    def __repr__(self):
        return (f"StackedDeviceTensor(full_shape={self.full_shape}, dtype={self.dtype.name}, "
                f"worker_ids={list(self.worker_ids)})")


class DistributedWorker:
    """A set of rank processes kept across calls of one or several orchestrator programs.

    ``DistributedWorker(config, programs, *, persistent=False, reset_persistent_windows=None,
    recovery=True, startup_timeout=0.0, kernels=())``

    * ``config``: a pld.DistributedConfig (its swimlane / dfx_dir settings apply to every call).
    * ``programs``: one orchestrator ``program(h, *args)`` or a list of them; only these may be run.
    * ``persistent``: keep window buffers for the worker's lifetime — each (program, comm domain,
      buffer name) gets the same window place in every call, and a later call may not change its
      size. Off: every call's windows are fresh and zero-filled.
    * ``reset_persistent_windows``: zero persistent buffers before each reuse. None = reset iff
      persistent; True requires persistent; False keeps the previous call's contents (safe only
      with self-clearing signals or epochs).
    * ``recovery``: replace a rank process that died so that the next call succeeds. Off: every
      later call raises "the worker is broken".
    * ``startup_timeout``: seconds the ranks get to start (0 = PLD_STARTUP_TIMEOUT, default 30).
    * ``kernels``: functions to register before the ranks fork, so that lambdas and nested
      functions can be dispatched (see the module's help: which kernels a worker can run).

    Use it as a context manager, or call close(). Calls execute one after another in
    submission order.
    """

    def __init__(self, config, programs, *, persistent=False, reset_persistent_windows=None,
                 recovery=True, startup_timeout=0.0, kernels=()):
        if callable(programs):
            programs = [programs]
        elif isinstance(programs, (list, tuple)):
            programs = list(programs)
        else:
            raise _pld.UsageError(
                f"DistributedWorker: programs {programs!r} is neither a function nor a list of "
                "functions; pass program or [program_a, program_b]")
        for k in kernels:
            if not callable(k):
                raise _pld.UsageError(
                    f"DistributedWorker: kernel {k!r} in kernels= is not callable; list kernel functions")
        for k in kernels:
            _pld.register_kernel(k)
        options = _pld.WorkerOptions(startup_timeout=startup_timeout, recovery=recovery,
                                     persistent=persistent,
                                     reset_persistent_windows=reset_persistent_windows)
        self._programs = tuple(programs)
        self._options = options
        self._core = _pld._Worker(config, programs, options)
        _live_workers.add(self)

    # ----- lifecycle -------------------------------------------------------------------------

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def close(self):
        """Waits for every accepted call (in submission order), then ends the rank processes.
        Idempotent; every call after it raises pld.UsageError."""
        self._core.close()
        _live_workers.discard(self)

    def world_size(self):
        """Number of ranks."""
        return self._core.world_size()

    @property
    def persistent(self):
        """True when window buffers persist across calls."""
        return self._options.persistent

    @property
    def reset_persistent_windows(self):
        """Whether persistent buffers are zeroed before each reuse (None: iff persistent)."""
        return self._options.reset_persistent_windows

    # ----- calls -----------------------------------------------------------------------------

    def _program(self, args, api):
        if len(self._programs) != 1:
            raise _pld.UsageError(
                f"DistributedWorker.{api}: the worker has {len(self._programs)} programs; name the one "
                f"to run: rt.run(program, *args)")
        return self._programs[0]

    def __call__(self, *args):
        """The single-program shortcut: ``rt(*args)`` runs the worker's only program."""
        program = self._programs[0] if len(self._programs) == 1 else self._program(args, "__call__")
        if not args:  # the per-iteration call of a loop: straight to the engine
            self._core.run(program, args)
            return
        self.run(program, *args)

    def run(self, program, *args):
        """Runs ``program(h, *args)`` (registered with this worker) and waits for it. Arguments
        reach the program unchanged, except numpy arrays: they are copied into shared memory for
        the call and the results copied back, as pld.run does (pld.HostTensor avoids the copies).
        Raises the call's error, e.g. pld.RankError when a rank failed (the worker recovers)."""
        if not args:  # the per-iteration call of a loop: nothing to share
            self._core.run(program, args)
            return
        args, copies = _share_arrays("DistributedWorker.run", args)
        self._core.run(program, args)
        _copy_back(copies)

    def submit(self, program, *args):
        """Starts ``program(h, *args)`` and returns a pld.RunHandle at once (after recording it):
        ``handle.result(timeout=None)``, ``handle.wait(timeout)``, ``handle.done()``. At most two
        calls are in flight; a third submit waits for the oldest. The worker keeps the arguments
        alive until the call has finished. Host tensors must be in shared memory, pld.HostTensor or
        numpy arrays created under pld.shared_numpy() (results land in them while the call runs); an
        array in ordinary memory is refused."""
        args = list(args)
        for i, a in enumerate(args):
            if isinstance(a, numpy.ndarray):
                args[i] = _pld._shared_view(a)
                if args[i] is None:
                    raise _pld.UsageError(
                        f"DistributedWorker.submit: argument {i} is a numpy array in ordinary memory; an "
                        "asynchronous call cannot copy results back into it — create it under pld.shared_numpy() "
                        "or pass pld.HostTensor.from_numpy(array) (or use run())")
        return self._core.submit(program, tuple(args))

    def benchmark(self, program, *args, rounds=100, warmup=10):
        """Runs ``program(h, *args)`` ``warmup`` times, then ``rounds`` times one after another,
        and returns pld.BenchmarkStats (microseconds per call): total, host (recording), ranks
        (execution) and kernels (the slowest rank's time inside its kernels)."""
        return self._core.benchmark(program, args, rounds, warmup)

    # ----- resident tensors --------------------------------------------------------------------

    def alloc_tensor(self, shape, dtype=None, worker_id=0, init=None):
        """A pld.DeviceTensor of ``shape`` and ``dtype`` (default float32) resident in world
        rank ``worker_id``'s process, zero-filled or copied from ``init`` (any array-like of
        numel(shape) elements). ``alloc_tensor(array, worker_id=r)`` takes shape, dtype and
        contents from a numpy array."""
        if init is None and hasattr(shape, "shape") and hasattr(shape, "dtype"):
            init, shape = shape, tuple(shape.shape)
            dtype = init.dtype if dtype is None else dtype
        return self._core.alloc_tensor(shape, dtype, worker_id, init)

    def free_tensor(self, tensor):
        """Releases the tensor's memory in its rank process; the handle becomes invalid."""
        self._core.free_tensor(tensor)

    def copy_to(self, dst, src):
        """Host -> resident tensor: ``src`` (array-like, exactly dst.numel elements, converted to
        dst.dtype) is copied into ``dst``."""
        self._core.copy_to(dst, src)

    def copy_from(self, src, out=None):
        """Resident tensor -> host: returns a numpy array of src.shape (or fills ``out``, a
        C-contiguous array of src's dtype and size, and returns it)."""
        return self._core.copy_from(src, out)

    def alloc_stacked_tensor(self, host, worker_ids=None, dtype=None):
        """Splits ``host`` ([B, shard...] array-like) into B resident shards, shard i on world rank
        ``worker_ids[i]`` (default 0..B-1). On failure every shard already made is freed."""
        array = numpy.ascontiguousarray(host, dtype=None if dtype is None else _pld.dtype(dtype).numpy)
        if array.ndim < 1 or array.shape[0] < 1:
            raise _pld.UsageError(
                f"DistributedWorker.alloc_stacked_tensor: shape {array.shape} needs a leading batch "
                "dimension B >= 1 (at least one shard)")
        ids = self._core.stacked_ids(array.shape[0], [] if worker_ids is None else list(worker_ids))
        shards = []
        try:
            for i, rank in enumerate(ids):
                shards.append(self.alloc_tensor(array.shape[1:], array.dtype, rank, array[i]))
        except BaseException:
            for s in shards:
                self.free_tensor(s)
            raise
        return StackedDeviceTensor(shards, array.shape, ids)

    def copy_stacked_from(self, src, out=None):
        """All shards -> one host array of src.full_shape (or into ``out``), returned."""
        if out is None:
            out = numpy.empty(src.full_shape, dtype=src.dtype.numpy)
        elif tuple(getattr(out, "shape", ())) != src.full_shape:
            raise _pld.UsageError(
                f"DistributedWorker.copy_stacked_from: out has shape {getattr(out, 'shape', None)}, "
                f"the stacked tensor {src.full_shape}; pass out=None or an array of that shape")
        for i, shard in enumerate(src.shards):
            self.copy_from(shard, out[i])
        return out

    def free_stacked_tensor(self, tensor):
        """Frees every shard."""
        for s in tensor.shards:
            self.free_tensor(s)

    def __repr__(self):
        return f"DistributedWorker(world_size={self.world_size()}, programs={len(self._programs)})"
