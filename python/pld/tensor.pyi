# Type stubs of pld.tensor: data movement and composite collectives inside kernels.
from typing import Any, Optional, Sequence, Union

import numpy as np

from ._pld import AllreduceMode, AtomicType, DistributedTensor, HostTensor, NotifyOp, ReduceOp

Offsets = Union[int, Sequence[int]]
Local = Union[np.ndarray, HostTensor, DistributedTensor]

def barrier(signal: DistributedTensor) -> DistributedTensor: ...
def allreduce(
    target: DistributedTensor,
    signal: DistributedTensor,
    *,
    op: ReduceOp = ...,
    mode: AllreduceMode = ...,
    core_num: int = ...,
    reproducible: bool = ...,
) -> DistributedTensor:
    """In place: every rank's target becomes op over every rank's target; returns target."""
def broadcast(target: DistributedTensor, signal: DistributedTensor, *, root: int = ..., core_num: int = ...) -> DistributedTensor: ...
def allgather(local: Local, target: DistributedTensor, signal: DistributedTensor, *, core_num: int = ...) -> DistributedTensor: ...
def reduce_scatter(
    target: DistributedTensor, signal: DistributedTensor, *, op: ReduceOp = ..., core_num: int = ...
) -> DistributedTensor: ...
def all_to_all(input: Local, target: DistributedTensor, signal: DistributedTensor, *, core_num: int = ...) -> DistributedTensor: ...
def all_to_all_v(
    input: Local,
    target: DistributedTensor,
    signal: DistributedTensor,
    send_counts: Local,
    recv_counts: DistributedTensor,
    *,
    core_num: int = ...,
) -> DistributedTensor: ...
def put(dst: DistributedTensor, peer: int, src: Local, dst_offsets: Optional[Offsets] = ...,
        src_offsets: Optional[Offsets] = ..., shape: Optional[Offsets] = ..., *, atomic: AtomicType = ...,
        chunk_rows: int = ..., chunk_cols: int = ..., pipeline: bool = ...) -> None: ...
def get(dst: Local, peer: int, src: DistributedTensor, dst_offsets: Optional[Offsets] = ...,
        src_offsets: Optional[Offsets] = ..., shape: Optional[Offsets] = ..., *, chunk_rows: int = ...,
        chunk_cols: int = ..., pipeline: bool = ...) -> None: ...
def put_nbi(dst: DistributedTensor, peer: int, src: Local, dst_offsets: Optional[Offsets] = ...,
            src_offsets: Optional[Offsets] = ..., shape: Optional[Offsets] = ..., *, atomic: AtomicType = ...,
            chunk_rows: int = ..., chunk_cols: int = ..., pipeline: bool = ...) -> None: ...
def get_nbi(dst: Local, peer: int, src: DistributedTensor, dst_offsets: Optional[Offsets] = ...,
            src_offsets: Optional[Offsets] = ..., shape: Optional[Offsets] = ..., *, chunk_rows: int = ...,
            chunk_cols: int = ..., pipeline: bool = ...) -> None: ...
def put_signal(dst: DistributedTensor, peer: int, src: Local, *rest: Any, **options: Any) -> None:
    """put_signal(dst, peer, src[, dst_offsets, src_offsets, shape], signal, signal_offsets, value, op, ...)."""
def put_signal_nbi(dst: DistributedTensor, peer: int, src: Local, *rest: Any, **options: Any) -> None: ...
def remote_store(src: Local, dst: DistributedTensor, peer: int, offsets: Offsets, atomic: AtomicType = ...) -> None: ...
