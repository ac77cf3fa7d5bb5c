"""pld: symmetric windows, signals and collectives for distributed programs (PyPTO's names).

    import pld
    def kernel(data, sig): ...                      # runs inside a rank process
    def orchestrator(h, inp, out):                  # runs on the host
        buf = h.alloc_window_buffer((1, 256), pld.DType.FP32, "data")
        for r in range(h.world_size()):
            h.dispatch(r, kernel, h.window(buf, (1, 256), pld.DType.FP32), ...)
    pld.run(pld.DistributedConfig(device_ids=[0, 1]), orchestrator, inp, out)

Kernel-side calls live in the namespaces pld.system, pld.tile and pld.tensor.
"""
from . import _pld
from ._pld import (  # noqa: F401
    AbortedError, AllreduceMode, AtomicType, BackendKind, CommCtx, CommDomain, DType, DistributedConfig,
    DistributedTensor, Error, Host, HostTensor, NotifyOp, RaceCheck, RankError, RankFailure, ReduceOp, UsageError,
    WaitCmp, WaitTimeoutError, WindowBuffer, dtype, gather, get_comm_ctx, in_shared_memory, is_output_rank,
    launcher_world_size, nranks, rank, register_kernel,
)
from ._host import bfloat16, from_bfloat16, to_bfloat16  # noqa: F401
from ._run import run  # noqa: F401
from ._shared_numpy import shared_numpy  # noqa: F401
from . import system, tile, tensor  # noqa: F401
from ._pld import TaskGraph, TaskId, kMaxDeferConditions, kMaxDeferredTasks, kMaxTaskThreads  # noqa: F401
from .worker import (  # noqa: F401
    BenchmarkStats, DeviceTensor, DistributedWorker, RunHandle, StackedDeviceTensor,
)

__all__ = [
    "AbortedError", "AllreduceMode", "AtomicType", "BackendKind", "CommCtx", "CommDomain", "DType",
    "DistributedConfig", "DistributedTensor", "Error", "Host", "HostTensor", "NotifyOp", "RaceCheck", "RankError",
    "RankFailure", "ReduceOp", "UsageError", "WaitCmp", "WaitTimeoutError", "WindowBuffer", "bfloat16", "dtype",
    "from_bfloat16", "gather", "get_comm_ctx", "in_shared_memory", "is_output_rank", "launcher_world_size",
    "nranks", "rank", "register_kernel", "run", "shared_numpy", "system", "tensor", "tile", "to_bfloat16",
    "BenchmarkStats", "DeviceTensor", "DistributedWorker", "RunHandle", "StackedDeviceTensor", "TaskGraph", "TaskId",
    "kMaxDeferConditions", "kMaxDeferredTasks", "kMaxTaskThreads",
]
