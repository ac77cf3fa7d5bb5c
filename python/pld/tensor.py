"""pld.tensor: data movement and collectives inside kernels. put / get (full slice, or the region
form with dst_offsets, src_offsets and shape, positionally as in C++ or by keyword), remote_store,
put_signal, the non-blocking put_nbi / get_nbi / put_signal_nbi, and the composite collectives
barrier, allreduce, broadcast, allgather, reduce_scatter, all_to_all, all_to_all_v with their
options as keyword arguments (op=pld.ReduceOp.Max, mode=..., root=..., core_num=...). The loops
run in the runtime's C++ with the GIL released."""
from ._pld import UsageError
from ._pld import _tensor as _t

barrier = _t.barrier
allreduce = _t.allreduce
broadcast = _t.broadcast
allgather = _t.allgather
reduce_scatter = _t.reduce_scatter
all_to_all = _t.all_to_all
all_to_all_v = _t.all_to_all_v
remote_store = _t.remote_store

_REGION = ("dst_offsets", "src_offsets", "shape")


def _region(api, region, options):
    if region:
        if len(region) != 3:
            raise UsageError(f"tensor::{api}: the region form takes dst_offsets, src_offsets and shape (got "
                             f"{len(region)} positional values); give all three")
        for name, value in zip(_REGION, region):
            if name in options:
                raise UsageError(f"tensor::{api}: {name} given twice; pass it positionally or by keyword")
            options[name] = value
    return options


def put(dst, peer, src, *region, **options):
    """put(dst, peer, src[, dst_offsets, src_offsets, shape], atomic=AtomicType.NONE, chunk_rows=0,
    chunk_cols=0, pipeline=False): copies src (a rank-local array or this rank's window copy) into rank
    peer's copy of dst. Synchronous for the sender; pair it with notify / wait."""
    _t.put(dst, peer, src, **_region("put", region, options))


def get(dst, peer, src, *region, **options):
    """get(dst, peer, src[, dst_offsets, src_offsets, shape], chunk_rows=0, chunk_cols=0, pipeline=False):
    copies rank peer's copy of src into dst (a rank-local array or this rank's window copy)."""
    _t.get(dst, peer, src, **_region("get", region, options))


def put_nbi(dst, peer, src, *region, **options):
    """Non-blocking put: complete at pld.system.quiet(); src is read until then."""
    _t.put(dst, peer, src, nbi=True, **_region("put_nbi", region, options))


def get_nbi(dst, peer, src, *region, **options):
    """Non-blocking get: dst holds the data after pld.system.quiet()."""
    _t.get(dst, peer, src, nbi=True, **_region("get_nbi", region, options))


def _put_signal(api, nbi, dst, peer, src, rest, options):
    if len(rest) == 7:
        region, rest = rest[:3], rest[3:]
    elif len(rest) == 4:
        region = ()
    else:
        raise UsageError(f"tensor::{api}: takes (dst, peer, src[, dst_offsets, src_offsets, shape], signal, "
                         f"signal_offsets, value, op); got {3 + len(rest)} positional arguments")
    signal, signal_offsets, value, op = rest
    _t.put_signal(dst, peer, src, signal, signal_offsets, value, op, nbi=nbi, **_region(api, region, options))


def put_signal(dst, peer, src, *rest, **options):
    """put_signal(dst, peer, src[, dst_offsets, src_offsets, shape], signal, signal_offsets, value, op,
    atomic=..., chunk_rows=..., chunk_cols=..., pipeline=...): put, then notify(signal, peer,
    signal_offsets, value, op); a rank whose wait observes the signal sees the data."""
    _put_signal("put_signal", False, dst, peer, src, rest, options)


def put_signal_nbi(dst, peer, src, *rest, **options):
    """Non-blocking put_signal: src is read until pld.system.quiet(); the signal still follows the data."""
    _put_signal("put_signal_nbi", True, dst, peer, src, rest, options)
